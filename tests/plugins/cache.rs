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

    let path = components::GC_DEFAULT.path();
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

/// Runs as root (as wasmlet does): hands `path` to the `nobody` user.
fn give_away(path: &Path) {
    std::os::unix::fs::lchown(path, Some(65534), Some(65534))
        .unwrap_or_else(|e| panic!("chown {} (these tests run as root): {e}", path.display()));
}

#[test]
fn a_cache_directory_or_entry_someone_else_can_write_is_not_trusted() {
    use std::os::unix::fs::MetadataExt;
    let path = components::GC_DEFAULT.path();
    let bytes = std::fs::read(&path).unwrap();
    let sha = sha256_hex(&bytes);

    // A directory owned by another user, or a symlink, turns the cache off: nothing is
    // written there.
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    give_away(&theirs);
    let engine = PluginEngine::new(Some(theirs.clone())).unwrap();
    engine.compile(&path, &bytes, &sha, false).unwrap();
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    let engine = PluginEngine::new(Some(link)).unwrap();
    engine.compile(&path, &bytes, &sha, false).unwrap();
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 0);

    // Entries are written 0600; a valid entry that another user owns, or that others may
    // write, is compiled again and replaced by one of this user's.
    let cache = dir.path().join("cache");
    let engine = PluginEngine::new(Some(cache.clone())).unwrap();
    engine.compile(&path, &bytes, &sha, false).unwrap();
    let cached = entry(&cache);
    let digest = cached.with_extension("cwasm.sha256");
    for file in [&cached, &digest] {
        assert_eq!(std::fs::metadata(file).unwrap().mode() & 0o777, 0o600);
    }
    give_away(&cached);
    engine.compile(&path, &bytes, &sha, false).unwrap();
    assert_eq!(std::fs::metadata(&cached).unwrap().uid(), 0, "replaced");
    std::fs::set_permissions(&digest, std::fs::Permissions::from_mode(0o666)).unwrap();
    engine.compile(&path, &bytes, &sha, false).unwrap();
    assert_eq!(
        std::fs::metadata(&digest).unwrap().mode() & 0o777,
        0o600,
        "replaced"
    );
}
