#!/usr/bin/env bash
# Scaffold one workspace package: tools/new-package.sh DIR NAME 'deps-json'
set -euo pipefail
dir=$1 name=$2 deps=${3:-'{}'}
mkdir -p "$dir/src" "$dir/test"
cat > "$dir/package.json" <<JSON
{
  "name": "$name",
  "version": "0.1.0",
  "private": true,
  "type": "module",
  "exports": {
    ".": { "@libos/source": "./src/index.ts", "types": "./dist/index.d.ts", "default": "./dist/index.js" }
  },
  "scripts": {
    "build": "tsc -p tsconfig.build.json",
    "typecheck": "tsc -p tsconfig.json --noEmit",
    "lint": "biome check .",
    "test": "vitest run"
  },
  "dependencies": $deps
}
JSON
cat > "$dir/tsconfig.json" <<JSON
{
  "extends": "$(realpath --relative-to="$dir" tsconfig.base.json)",
  "compilerOptions": { "noEmit": true },
  "include": ["src", "test", "*.ts"]
}
JSON
cat > "$dir/tsconfig.build.json" <<JSON
{
  "extends": "$(realpath --relative-to="$dir" tsconfig.base.json)",
  "compilerOptions": { "rootDir": "src", "outDir": "dist" },
  "include": ["src"]
}
JSON
cat > "$dir/vitest.config.ts" <<TS
import { libosVitestConfig } from '$(realpath --relative-to="$dir" vitest.shared.ts)';

export default libosVitestConfig();
TS
