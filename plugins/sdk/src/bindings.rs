//! wit-bindgen output for the four worlds, one module each (wasm32 only).
//!
//! Every module carries its own copy of the shared interfaces (`types`,
//! `host`, `pod-meta`); they name the same component imports, so any copy
//! may be called. With `pub_export_macro`, a module's custom section
//! declares only its world's imports; its exports are declared by the
//! section the world's export macro emits into the plugin crate, so a plugin
//! exports exactly the world it chose.

// Generated exports take one argument per flattened core value.
#![allow(clippy::too_many_arguments)]

pub mod eviction {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasmlet:plugin/eviction-policy@0.1.2",
        runtime_path: "::wasmlet_plugin_sdk::__rt::wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_eviction",
    });
}

/// `pressure-eviction-policy` (0.1.2): `eviction-policy` plus the `pressure-watch` export.
/// Its shared interfaces are those of [`eviction`], so one conversion serves both worlds.
pub mod pressure_eviction {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasmlet:plugin/pressure-eviction-policy@0.1.2",
        runtime_path: "::wasmlet_plugin_sdk::__rt::wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_pressure_eviction",
        with: {
            "wasmlet:plugin/types@0.1.2": crate::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host@0.1.2": crate::bindings::eviction::wasmlet::plugin::host,
            "wasmlet:plugin/pod-meta@0.1.2": crate::bindings::eviction::wasmlet::plugin::pod_meta,
        },
    });
}

pub mod gc {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasmlet:plugin/gc-strategy@0.1.2",
        runtime_path: "::wasmlet_plugin_sdk::__rt::wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_gc",
    });
}

pub mod probe {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasmlet:plugin/probe-handler@0.1.2",
        runtime_path: "::wasmlet_plugin_sdk::__rt::wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_probe",
    });
}

pub mod hooks {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasmlet:plugin/lifecycle-hooks@0.1.2",
        runtime_path: "::wasmlet_plugin_sdk::__rt::wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_hooks",
    });
}
