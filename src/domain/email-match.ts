// How e-mails match: ASCII letters match in either case; every other character matches only itself.
// Unicode lower-casing would also match characters a mail system keeps apart: the Kelvin sign
// (U+212A) with "k", the dotted capital I (U+0130) with "i̇". The stored email_folded column holds this
// form, so SQLite and PostgreSQL match exactly alike.
export const foldEmail = (email: string): string => email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
