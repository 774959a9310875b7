//! Property tests over what the host reads from plugins and their operators: the plugin
//! configuration file and the packed pod layout of eviction ranking. They sit in the host
//! crate because the configuration parser is private to the plugin host crate: it is reached
//! here as the node reaches it, through the registry's reload.

use proptest::prelude::*;
use std::sync::Arc;
use wasmlet_plugin_host::{PluginEngine, PluginRegistry};
use wasmlet_policy_default::packed::{
    pack_pods, pods_as_words, pods_from_words, unpack_pods, POD_WORDS,
};

const VALID: &str = "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: rank\n  world: eviction-policy\n  path: /nonexistent/rank.wasm\n  limits: {deadlineMs: 100, memoryMiB: 32, fuel: 1000000}\n  config: {mode: batch}\n  capabilities:\n    directories: [{hostPath: /tmp, guestPath: /data}]\n";

struct Fixture {
    _dir: tempfile::TempDir,
    file: std::path::PathBuf,
    registry: Arc<PluginRegistry>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plugins.yaml");
    std::fs::write(&file, "").unwrap();
    let registry = PluginRegistry::new(PluginEngine::new(None).unwrap(), Some(file.clone()));
    Fixture {
        _dir: dir,
        file,
        registry,
    }
}

/// Loads `text` as the config; a refusal must name the file and a place in it.
fn check_config(fixture: &Fixture, text: &str) -> Option<String> {
    std::fs::write(&fixture.file, text).unwrap();
    fixture.registry.reload();
    let error = fixture.registry.report()["configError"]
        .as_str()?
        .to_string();
    let prefix = format!("{}: ", fixture.file.display());
    let rest = error.strip_prefix(&prefix);
    assert!(rest.is_some(), "does not name the file: {error}");
    let place = rest
        .unwrap_or_default()
        .split(": ")
        .next()
        .unwrap_or_default();
    assert!(!place.is_empty(), "names no place: {error}");
    Some(error)
}

#[test]
fn the_valid_config_is_accepted() {
    let fixture = fixture();
    assert_eq!(check_config(&fixture, VALID), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_config_text_is_loaded_or_refused_by_place(text in ".{0,300}") {
        let fixture = fixture();
        check_config(&fixture, &text);
    }

    /// The valid config with one value replaced, so the checks past the YAML parse are reached.
    #[test]
    fn a_config_with_one_value_changed(index in 0usize..64, value in prop_oneof![
        "-?[0-9]{1,25}",
        "[a-zA-Z0-9./_-]{0,70}",
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("~".to_string()),
        ".{0,30}",
    ]) {
        let colons: Vec<usize> = VALID.match_indices(':').map(|(i, _)| i).collect();
        let at = colons[index % colons.len()];
        let end = VALID[at..].find(['\n', ',', '}']).map_or(VALID.len(), |e| at + e);
        let fixture = fixture();
        check_config(&fixture, &format!("{}: {value}{}", &VALID[..at], &VALID[end..]));
    }

    /// Any word list decodes or is refused naming the pod list or a pod, the in-place and the
    /// field-by-field readers agree, and what decodes packs back to the same words.
    #[test]
    fn packed_pods_decode_or_are_refused_by_pod(
        words in prop::collection::vec(prop_oneof![any::<u64>(), 0u64..4, (0u64..3).prop_map(|q| q << 32)], 0..4 * POD_WORDS),
        valid_flags in any::<bool>(),
    ) {
        let mut words = words;
        if valid_flags {
            // Mostly-valid pods: qos and flag bytes in range, the rest arbitrary.
            for chunk in words.chunks_mut(POD_WORDS) {
                chunk[0] &= 0x0101_0102_ffff_ffff;
                if (chunk[0] >> 32) & 0xff == 3 { chunk[0] &= !(1 << 32); }
            }
        }
        let fast = pods_from_words(&words);
        let slow = unpack_pods(&words);
        match (&fast, &slow) {
            (Ok(fast), Ok(slow)) => {
                prop_assert_eq!(&fast[..], &slow[..]);
                let mut packed = Vec::new();
                pack_pods(slow, &mut packed);
                prop_assert_eq!(&packed, &words);
                prop_assert_eq!(&pods_as_words(slow)[..], &words[..]);
            }
            (Err(a), Err(b)) => {
                prop_assert_eq!(a, b);
                prop_assert!(a.starts_with("pod "), "{}", a);
            }
            _ => prop_assert!(false, "the readers disagree: {:?} / {:?}", fast, slow),
        }
    }
}
