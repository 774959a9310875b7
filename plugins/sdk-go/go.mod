module wasmlet.dev/plugin

go 1.24
