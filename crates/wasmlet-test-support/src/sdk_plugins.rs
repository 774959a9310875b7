//! The SDK examples `scripts/build-sdk-plugins.sh` builds (`target/sdk-plugins/LANG/NAME.wasm`),
//! found for the tests that run them. Shared by tests/plugins and tests/plugin_cli.rs.

use std::path::{Path, PathBuf};

/// The SDK builds of `name` in `langs` under `dir` (the `target/sdk-plugins` directory), by
/// language. `None` when no SDK example was built at all, which CI never allows; once the
/// directory exists, every component asked for must be there.
pub fn components(
    dir: &Path,
    name: &str,
    langs: &[&'static str],
) -> Option<Vec<(&'static str, PathBuf)>> {
    if !dir.exists() {
        assert!(
            std::env::var("CI").is_err(),
            "{} does not exist: CI builds it (scripts/build-sdk-plugins.sh)",
            dir.display()
        );
        eprintln!(
            "{} does not exist: the SDK tests skipped (run scripts/build-sdk-plugins.sh)",
            dir.display()
        );
        return None;
    }
    Some(
        langs
            .iter()
            .map(|lang| {
                let path = dir.join(lang).join(format!("{name}.wasm"));
                assert!(
                    path.exists(),
                    "{} is missing: run scripts/build-sdk-plugins.sh",
                    path.display()
                );
                (*lang, path)
            })
            .collect(),
    )
}
