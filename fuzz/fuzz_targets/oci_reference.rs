//! An `oci://` reference from the plugin configuration. Never panics; what parses prints as a
//! reference that parses back to the same registry, repository, tag and digest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasmlet_plugin_host::OciReference;

fuzz_target!(|text: &str| {
    let Ok(reference) = OciReference::parse(text) else {
        return;
    };
    let shown = reference.to_string();
    let again = OciReference::parse(shown.strip_prefix("oci://").expect("oci:// in front"))
        .unwrap_or_else(|error| panic!("{text:?} -> {shown:?}: {error}"));
    assert_eq!(again.registry(), reference.registry(), "{text:?}");
    assert_eq!(again.repository(), reference.repository(), "{text:?}");
    assert_eq!(again.tag(), reference.tag(), "{text:?}");
    assert_eq!(again.digest(), reference.digest(), "{text:?}");
    let _ = reference.is_loopback();
    let _ = reference.repository_name();
});
