import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'scratch/', 'coverage/', 'test-results/', 'test/runtimes/.work/'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['test/**', 'bench/**', 'examples/**'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    // The runtime apps are plain JavaScript run as they are by Node, Bun, Deno, workerd and Next's edge runtime.
    files: ['test/runtimes/apps/**/*.js'],
    languageOptions: {
      globals: { console: 'readonly', process: 'readonly', navigator: 'readonly', setTimeout: 'readonly', Request: 'readonly', Response: 'readonly', URL: 'readonly', Bun: 'readonly', Deno: 'readonly', EdgeRuntime: 'readonly' },
    },
  },
)
