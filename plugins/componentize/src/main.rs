//! `wasmlet-componentize WIT_DIR WORLD CORE.wasm OUT.wasm`: makes a wasmlet plugin component
//! out of a core WebAssembly module built for `wasip1` (Go's `GOOS=wasip1 GOARCH=wasm
//! -buildmode=c-shared`, whose `//go:wasmexport` functions follow the canonical ABI).
//!
//! It embeds WORLD of the `wasmlet:plugin` package in WIT_DIR as the module's component type,
//! then lets `wit-component` check every import and export against that world (a binding whose
//! signature drifted from `wit/` fails here, not on a node) and wrap the module with the WASI
//! preview1 reactor adapter that wasmtime publishes, so the guest's `wasi_snapshot_preview1`
//! calls become WASI 0.2 imports, the ones the host links deny-all. The adapter calls the
//! module's `_initialize` (the Go runtime's start-up) when the component is instantiated.
//! The adapter allocates from a static arena of the Go SDK instead of the module's
//! `cabi_realloc` (see [`arena`]).

mod arena;

use anyhow::{bail, Context, Result};
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};
use wit_component::{embed_component_metadata, ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wit_dir, world, core, out] = args.as_slice() else {
        bail!("usage: wasmlet-componentize WIT_DIR WORLD CORE.wasm OUT.wasm");
    };
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(wit_dir)
        .with_context(|| format!("cannot read the WIT package in {wit_dir}"))?;
    let world_id = resolve
        .select_world(&[package], Some(world))
        .with_context(|| format!("no world {world} in {wit_dir}"))?;
    let module = std::fs::read(core).with_context(|| format!("cannot read {core}"))?;
    let mut module = arena::add_adapter_realloc(&module)
        .with_context(|| format!("cannot add the adapter's allocator to {core}"))?;
    embed_component_metadata(&mut module, &resolve, world_id, StringEncoding::UTF8, false)?;
    let component = ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .with_context(|| format!("{core} does not fit world {world}"))?
        .adapter(
            WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .encode()
        .with_context(|| format!("{core} does not fit world {world}"))?;
    std::fs::write(out, component).with_context(|| format!("cannot write {out}"))?;
    Ok(())
}
