// ESLint flat config shared by every project: typescript-eslint with type information, so that floating
// promises and `any` leaks are caught (STYLE.md: "No floating promises (lint rule on)").
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/.nx/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
      '**/migrations/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
    },
  },
  {
    // Tests, tools and app entry points may print.
    files: [
      '**/*.test.ts',
      '**/test/**/*.ts',
      'apps/**/src/main.ts',
      'apps/**/src/cli/**/*.ts',
      'tools/**/*.ts',
    ],
    rules: { 'no-console': 'off' },
  },
  {
    // @ccagent/store-postgres shares the codec, errors, validators and verdicts with the SQLite store only through
    // @ccagent/store-core (issue 34), its tests included (the comparison with the SQLite store is @ccagent/store's).
    files: ['packages/store-postgres/src/**/*.ts', 'packages/store-postgres/test/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@ccagent/store',
              message:
                'store-postgres must not depend on the SQLite store: import shared code from @ccagent/store-core.',
            },
          ],
        },
      ],
    },
  },
);
