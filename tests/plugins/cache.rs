//! The compile cache: private to its user, and an entry is loaded only when its bytes match
//! the digest recorded when wasmlet wrote it; a tampered or truncated entry is recompiled.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn entry(cache: &Path) -> PathBuf {
    std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("a .cwasm entry")
}

#[test]
fn a_tampered_or_truncated_cache_entry_is_recompiled_from_the_wasm() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let engine = PluginEngine::new(Some(cache.clone())).unwrap();
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "only its owner may write the cache");

    let path = wasm("gc_default");
    let bytes = std::fs::read(&path).unwrap();
    let sha = sha256_hex(&bytes);
    engine.compile(&path, &bytes, &sha, false).unwrap();
    let cached = entry(&cache);
    let written = std::fs::read(&cached).unwrap();

    // One byte flipped in the middle (the code, past wasmtime's header check).
    let mut tampered = written.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0xff;
    std::fs::write(&cached, &tampered).unwrap();
    engine.compile(&path, &bytes, &sha, false).unwrap();
    let rewritten = std::fs::read(&cached).unwrap();
    assert_ne!(
        rewritten, tampered,
        "the tampered entry was recompiled and replaced"
    );
    assert_eq!(
        std::fs::read_to_string(cached.with_extension("cwasm.sha256")).unwrap(),
        sha256_hex(&rewritten)
    );

    // Truncated.
    std::fs::write(&cached, &rewritten[..rewritten.len() / 3]).unwrap();
    engine.compile(&path, &bytes, &sha, false).unwrap();
    assert_eq!(std::fs::read(&cached).unwrap().len(), rewritten.len());

    // A plugin served from the recompiled entry still decides.
    let setup = registry(&plugin("gc", "gc-strategy", &path, ""));
    let decision = setup
        .registry
        .plan_containers(&[], Vec::new(), &Default::default());
    assert!(plugin_decided(&decision), "{:?}", decision.decided_by);
}
