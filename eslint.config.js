// The page's JavaScript lint (the README's test command runs it; ESLint's flat config): ESLint's
// recommended rules, and lines of at most 120 characters as the Python's (pyproject.toml).
import js from "@eslint/js";
import globals from "globals";

const esm = { ecmaVersion: 2022, sourceType: "module" };

export default [
  { ignores: ["node_modules/", ".venv/", "runs/", "carry/"] }, // what .gitignore keeps out of the repository
  js.configs.recommended,
  { files: ["ui/js/**/*.js"], languageOptions: { ...esm, globals: globals.browser } },
  { files: ["tests/js/**/*.mjs", "eslint.config.js"], languageOptions: { ...esm, globals: globals.node } },
  { rules: { "max-len": ["error", { code: 120 }] } },
];
