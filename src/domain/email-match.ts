// How e-mails match (case-insensitively, docs/api-rules.md): each character folds to its lower case only
// when that is one character whose upper case is the character again, so É matches é and Σ matches σ.
// Characters whose lower case is another letter's, or more than one character, match only themselves:
// the Kelvin sign (U+212A, lower case "k"), the Angstrom sign (U+212B, lower case "å") and the dotted
// capital I (U+0130, lower case "i̇"), which a mail system keeps apart. The stored email_folded
// column holds this form, computed here, so SQLite and PostgreSQL match exactly alike.
export const foldEmail = (email: string): string => Array.from(email, foldCharacter).join("");

function foldCharacter(character: string): string {
  const lower = character.toLowerCase();
  return [...lower].length === 1 && lower.toUpperCase() === character ? lower : character;
}
