#!/bin/sh
# Copies the browser bundles the GraphiQL page loads from the installed npm packages
# (node_modules, after 'npm ci' here) to assets/, which the gateway serves on /graphiql.
# Used by ops/graphiql and by the image build.
set -eu
cd "$(dirname "$0")"
rm -rf assets && mkdir assets
cp node_modules/graphiql/graphiql.min.js node_modules/graphiql/graphiql.min.css \
  node_modules/react/umd/react.production.min.js node_modules/react-dom/umd/react-dom.production.min.js assets/
