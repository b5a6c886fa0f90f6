// Files the edge bundle inlines as text (auth-shim/edge-docs.ts).
declare module 'swagger-ui-dist/swagger-ui.css' {
  const text: string;
  export default text;
}
declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const text: string;
  export default text;
}
