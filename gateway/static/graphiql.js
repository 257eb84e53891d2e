// GraphiQL on this gateway's /graphql (queries and mutations over HTTP; subscriptions are for
// WebSocket clients, see the live page).
const fetcher = GraphiQL.createFetcher({ url: new URL("/graphql", window.location.href).href });
ReactDOM.createRoot(document.getElementById("graphiql")).render(
  React.createElement(GraphiQL, { fetcher, defaultEditorToolsVisibility: true }),
);
