// esbuild bundles the imported style sheets into console.css.
declare module "*.css";
