import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import ts from 'typescript-eslint';
import svelteConfig from './svelte.config.js';

// Transcript text is untrusted: it is rendered as text, never as HTML (SPEC U2).
const noHtmlInjection = [
  { selector: "AssignmentExpression[left.property.name=/^(innerHTML|outerHTML)$/]", message: 'Render text, never HTML: transcript text is untrusted.' },
  { selector: "CallExpression[callee.property.name='insertAdjacentHTML']", message: 'Render text, never HTML: transcript text is untrusted.' },
  { selector: "CallExpression[callee.property.name='createContextualFragment']", message: 'Render text, never HTML: transcript text is untrusted.' },
  { selector: "CallExpression[callee.object.name='document'][callee.property.name='write']", message: 'Render text, never HTML: transcript text is untrusted.' },
];

export default defineConfig(
  { ignores: ['dist/', 'node_modules/'] },
  js.configs.recommended,
  ts.configs.strict,
  svelte.configs.recommended,
  {
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
    rules: {
      'no-eval': 'error',
      'no-implied-eval': 'error',
      'no-new-func': 'error',
      'no-restricted-syntax': ['error', ...noHtmlInjection],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: {
      parserOptions: { projectService: true, extraFileExtensions: ['.svelte'], parser: ts.parser, svelteConfig },
    },
  },
  {
    files: ['**/*.svelte'],
    rules: {
      'svelte/no-at-html-tags': 'error',
      'svelte/require-each-key': 'error',
      'svelte/no-target-blank': 'error',
    },
  },
);
