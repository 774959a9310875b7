//! The plugin configuration file, through the registry's public reload (the parser itself is
//! private to the plugin host crate). Never panics; a refusal names the file and the place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use wasmlet_plugin_host::{PluginEngine, PluginRegistry};

struct Fixture {
    _dir: tempfile_dir::Dir,
    file: std::path::PathBuf,
    registry: std::sync::Arc<PluginRegistry>,
}

mod tempfile_dir {
    /// A directory removed when dropped.
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("wasmlet-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("plugins.yaml");
        std::fs::write(&file, "").expect("config file");
        let engine = PluginEngine::new(None).expect("engine");
        let registry = PluginRegistry::new(engine, Some(file.clone()));
        Fixture {
            _dir: tempfile_dir::Dir(dir),
            file,
            registry,
        }
    })
}

fuzz_target!(|text: &str| {
    let fixture = fixture();
    if std::fs::write(&fixture.file, text).is_err() {
        return;
    }
    fixture.registry.reload();
    let report = fixture.registry.report();
    if let Some(error) = report["configError"].as_str() {
        let prefix = format!("{}: ", fixture.file.display());
        let rest = error.strip_prefix(&prefix).unwrap_or(error);
        let place = rest.split(": ").next().unwrap_or("");
        assert!(!place.is_empty(), "{error}");
    }
});
