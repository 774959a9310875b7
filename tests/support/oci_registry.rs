//! A real OCI registry on loopback for tests: Debian's `docker-registry` package (the CNCF
//! distribution server), run from a temporary config with filesystem storage, stopped (and
//! restartable on the same port) by the test. Shared by tests/plugins and tests/plugin_cli.rs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The registry binary of Debian's `docker-registry` package.
pub const BINARY: &str = "/usr/bin/docker-registry";

/// A running (or stopped) registry; the process is killed on drop.
pub struct TestRegistry {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    htpasswd: bool,
}

/// The one user of [`TestRegistry::start_with_login`]: `alice`, password `s3cret` (bcrypt, as
/// distribution's htpasswd auth requires).
pub const HTPASSWD: &str = "alice:$2b$05$abcdefghijklmnopqrstuuLK7U1u6pVRmL7L1BBM2aS35PSZnDXlK";

impl TestRegistry {
    /// Starts a registry, or `None` when the binary is missing outside CI (scripts/test.sh
    /// installs it); under `CI=true` a missing binary fails the test.
    pub fn start() -> Option<Self> {
        Self::start_inner(false)
    }

    /// Like [`TestRegistry::start`], for a registry that asks for a login ([`HTPASSWD`]).
    pub fn start_with_login() -> Option<Self> {
        Self::start_inner(true)
    }

    fn start_inner(htpasswd: bool) -> Option<Self> {
        if !Path::new(BINARY).exists() {
            let message = format!(
                "{BINARY} is missing: apt-get install docker-registry (scripts/test.sh does)"
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{message}");
            }
            eprintln!("SKIPPED: {message}");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("htpasswd"), format!("{HTPASSWD}\n")).expect("htpasswd");
        let mut registry = Self {
            dir,
            port,
            child: None,
            htpasswd,
        };
        registry.resume();
        Some(registry)
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `oci://127.0.0.1:<port>/<path>`.
    pub fn reference(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.address())
    }

    /// The registry's filesystem storage.
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// Where the registry keeps the blob `sha256:<hex>`.
    pub fn blob_data(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.storage()
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Stops the registry (its storage stays): the registry is down.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the registry again on the same port and storage; waits until it answers.
    pub fn resume(&mut self) {
        self.stop();
        let config = self.dir.path().join("config.yml");
        let auth = if self.htpasswd {
            format!(
                "auth:\n  htpasswd:\n    realm: wasmlet-test\n    path: {}\n",
                self.dir.path().join("htpasswd").display()
            )
        } else {
            String::new()
        };
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {}\n{auth}",
                self.storage().display(),
                self.address()
            ),
        )
        .expect("registry config");
        let log = std::fs::File::create(self.dir.path().join("registry.log")).expect("log file");
        let child = Command::new(BINARY)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start docker-registry");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        let url = format!("http://{}/v2/", self.address());
        loop {
            // Up once it answers, 401 included (a registry asking for a login).
            if matches!(
                ureq::get(&url).call(),
                Ok(_) | Err(ureq::Error::Status(401, _))
            ) {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                let log = std::fs::read_to_string(self.dir.path().join("registry.log"))
                    .unwrap_or_default();
                panic!("docker-registry exited ({status}): {log}");
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry did not answer on {url}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}
