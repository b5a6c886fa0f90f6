/**
 * Lint rules, and the import boundaries that keep the layers one-way. A boundary is a rule on the import string:
 * each folder names the folders it must never reach. Layers of the generator, lowest first:
 * contract < catalog < site < api, openapi < output < previous, diff < the commands at the top level.
 * The shim sees only the contract; its Node adapter sees the contract and the output helpers.
 */
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** A `no-restricted-imports` rule forbidding import strings that match any of `regexes`, with the reason. */
const forbid = (message, ...regexes) => ({
  'no-restricted-imports': ['error', { patterns: regexes.map((regex) => ({ regex, message })) }],
});

// Relative import strings from a file one folder below generator/ (generator/<layer>/x.ts) or two (site/kinds).
const up = (folders) => `^(\\.\\./)+(${folders.join('|')})(/|\\.js$)`;
const COMMANDS = [
  'build',
  'build-options',
  'build-report',
  'cli',
  'commands',
  'check',
  'inspect',
  'keys',
  'market-readings',
  'plan-tree',
  'preview',
  'read-inputs',
];

export default tseslint.config(
  // dist-edge/ holds the worker as wrangler bundles it and the package files deployed beside it; .ci/node/ the Node
  // lines CI fetches.
  {
    ignores: [
      'dist/**',
      'dist-edge/**',
      '.wrangler/**',
      '.ci/node/**',
      'node_modules/**',
      'public/**',
      'fixtures/cases/**',
      'fixtures/golden/**',
      '.demo/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Sequence expressions are used on purpose in a few hot paths (set-and-return).
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
    },
  },
  { files: ['**/*.js', '**/*.mjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  // The contract is what both sides read: self-contained and runtime-neutral.
  { files: ['generator/contract/**/*.ts'], rules: forbid('the contract is self-contained and runtime-neutral', '^\\.\\./', '^node:') },
  // The shim runs on the edge: the contract only, no Node built-ins.
  {
    files: ['auth-shim/*.ts'],
    rules: forbid('the shim reads only the shared contract and runs without Node', '^\\.\\./(?!generator/contract/)', '^node:'),
  },
  {
    files: ['auth-shim/steps/*.ts', 'auth-shim/webhooks/*.ts'],
    rules: forbid('the shim reads only the shared contract and runs without Node', '^\\.\\./\\.\\./(?!generator/contract/)', '^node:'),
  },
  {
    files: ['auth-shim/node/**/*.ts'],
    rules: forbid('the Node adapter reads the contract and the output helpers only', '^\\.\\./\\.\\./(?!generator/(contract|output)/)'),
  },
  {
    files: ['generator/catalog/**/*.ts'],
    rules: forbid(
      'the catalogue sits below the site, the API and the output',
      up(['site', 'api', 'openapi', 'output', 'previous', 'diff', ...COMMANDS]),
    ),
  },
  {
    files: ['generator/site/**/*.ts'],
    rules: forbid(
      'a page parser knows pages only, not what is made of them',
      up(['api', 'openapi', 'output', 'previous', 'diff', ...COMMANDS]),
    ),
  },
  {
    files: ['generator/api/**/*.ts'],
    rules: forbid(
      'response bodies do not depend on the document or the writing',
      up(['openapi', 'output', 'previous', 'diff', ...COMMANDS]),
    ),
  },
  {
    files: ['generator/openapi/**/*.ts'],
    rules: forbid('the document is built from the contract, not from the bodies', up(['api', 'output', 'previous', 'diff', ...COMMANDS])),
  },
  {
    files: ['generator/output/**/*.ts'],
    rules: forbid('writing the tree knows the contract, not how readings are made', up(['site', 'api', 'previous', 'diff', ...COMMANDS])),
  },
  {
    files: ['generator/previous/**/*.ts', 'generator/diff/**/*.ts'],
    rules: forbid('reading a tree sits below the commands', up(['site', ...COMMANDS])),
  },
  // The read step is a leaf under build.ts: it returns plain data (build-inputs.ts) and knows nothing of what is
  // made of it, nor of the idle question.
  {
    files: ['generator/read-inputs.ts'],
    rules: forbid(
      'the read step returns plain data: no planner, API, OpenAPI or output writer',
      '^\\./(plan-tree|build|idle|market-readings)\\.js$',
      '^\\./(api|openapi|output)/',
    ),
  },
  // Only the `serve` command starts the shim; the rest of the generator never reaches it.
  {
    files: ['generator/**/*.ts'],
    ignores: ['generator/commands/serve.ts', 'generator/commands/usage.ts', 'generator/commands/webhooks.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'ImportDeclaration[source.value=/auth-shim/]', message: 'only generator/commands/serve.ts may import the shim' },
        { selector: 'ImportExpression[source.value=/auth-shim/]', message: 'only generator/commands/serve.ts may import the shim' },
      ],
    },
  },
  // Tests reach the edge's objects and KV over fetch (edge-setup.ts), never through miniflare's synchronous proxies.
  {
    files: ['test/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['getBindings', 'getDurableObjectNamespace', 'getKVNamespace', 'getWorker'].map((property) => ({
          property,
          message:
            'miniflare answers these through a synchronous thread that can pair a reply with the wrong call; use startEdge().objects or putKeys',
        })),
      ],
    },
  },
  // `usage` reads the quota stores' counts (their format is the shim's): the quota rule and its stores, nothing else.
  {
    files: ['generator/commands/usage.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ImportDeclaration[source.value=/auth-shim/]:not([source.value=/auth-shim\\/(quota|node\\/quota-[a-z]+)\\.js$/])',
          message: 'generator/commands/usage.ts reads the quota stores only',
        },
      ],
    },
  },
  // `webhooks` reads and switches endpoints in the stores serve keeps them in, or through the edge's operator routes.
  {
    files: ['generator/commands/webhooks.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            'ImportDeclaration[source.value=/auth-shim/]:not([source.value=/auth-shim\\/(webhooks\\/store|edge-operator|node\\/(quota-database|operator-client|webhooks-[a-z]+))\\.js$/])',
          message: 'generator/commands/webhooks.ts reads the webhook stores only',
        },
      ],
    },
  },
);
