//! The plugin components the tests and benchmarks load, by constant: every cdylib crate of
//! `plugins/` and every guest of `tests/guests/`, with the path `scripts/build-plugins.sh`
//! builds it to. The table is generated from those crates' manifests (`build.rs`).

use std::path::PathBuf;

/// A component built by `scripts/build-plugins.sh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// The file stem: the crate or example name with `_` for `-`.
    pub name: &'static str,
    /// Where the build puts it.
    pub path: &'static str,
}

impl Component {
    /// The component file; fails the test, saying how to build it, when it is missing.
    pub fn path(&self) -> PathBuf {
        let path = PathBuf::from(self.path);
        assert!(
            path.exists(),
            "{} is not built: run scripts/build-plugins.sh (the test command does)",
            path.display()
        );
        path
    }

    /// The component of that file stem, for tests that pick one by a computed name.
    pub fn named(name: &str) -> Component {
        ALL.iter()
            .copied()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no plugin or guest crate builds {name}.wasm"))
    }
}

include!(concat!(env!("OUT_DIR"), "/components.rs"));
