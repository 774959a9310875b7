//! A manifest as a registry (or the node's store) sends it: parsed, its one wasm layer picked,
//! and that layer's digest turned into a path of the store. Never panics; an accepted layer
//! is a wasm layer within the pull limit, and its blob path stays inside the store's blob
//! directory whatever digest the manifest names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::{Component, Path};
use wasmlet_plugin_host::oci_parsers::{
    Manifest, Store, LEGACY_WASM_LAYER_MEDIA_TYPE, MAX_LAYER_BYTES, WASM_LAYER_MEDIA_TYPE,
};

const STORE: &str = "/var/lib/wasmlet/plugins/oci";

fuzz_target!(|bytes: &[u8]| {
    let manifest = match Manifest::parse(bytes) {
        Ok(manifest) => manifest,
        Err(error) => {
            assert!(error.to_string().starts_with("the manifest "), "{error}");
            return;
        }
    };
    assert_eq!(manifest.schema_version, 2);
    let store = Store::new(STORE.into());
    for layer in &manifest.layers {
        if let Some(path) = store.blob_path(&layer.digest) {
            let rest = path
                .strip_prefix(Path::new(STORE).join("blobs/sha256"))
                .expect("a blob path inside the store");
            let parts: Vec<Component<'_>> = rest.components().collect();
            assert!(
                matches!(parts.as_slice(), [Component::Normal(_)]),
                "{:?} -> {}",
                layer.digest,
                path.display()
            );
        }
    }
    match manifest.wasm_layer() {
        Ok(layer) => {
            assert!(
                layer.media_type == WASM_LAYER_MEDIA_TYPE
                    || layer.media_type == LEGACY_WASM_LAYER_MEDIA_TYPE
            );
            assert!((0..=MAX_LAYER_BYTES as i64).contains(&layer.size));
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    }
});
