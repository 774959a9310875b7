//! A real OCI registry for tests: Debian's `docker-registry` package (the CNCF distribution
//! server), run from a temporary config with filesystem storage, stopped (and restartable on
//! the same port) by the test. On loopback over plain HTTP by default; over HTTPS with a test CA
//! made by `openssl` ([`TestRegistry::start_tls`]), or on another address of this machine
//! ([`TestRegistry::start_on`], [`non_loopback_ipv4`]). Shared by tests/plugins and
//! tests/plugin_cli.rs.

use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The registry binary of Debian's `docker-registry` package.
pub const BINARY: &str = "/usr/bin/docker-registry";

/// A running (or stopped) registry; the process is killed on drop.
pub struct TestRegistry {
    dir: tempfile::TempDir,
    host: IpAddr,
    port: u16,
    child: Option<Child>,
    htpasswd: bool,
    /// The server's certificate and key, signed by the CA at [`TestRegistry::ca_file`].
    tls: Option<(PathBuf, PathBuf)>,
}

/// The one user of [`TestRegistry::start_with_login`]: `alice`, password `s3cret` (bcrypt, as
/// distribution's htpasswd auth requires).
pub const HTPASSWD: &str = "alice:$2b$05$abcdefghijklmnopqrstuuLK7U1u6pVRmL7L1BBM2aS35PSZnDXlK";

impl TestRegistry {
    /// Starts a registry, or `None` when the binary is missing outside CI (scripts/test.sh
    /// installs it); under `CI=true` a missing binary fails the test.
    pub fn start() -> Option<Self> {
        Self::start_inner(false, IpAddr::V4(Ipv4Addr::LOCALHOST), false)
    }

    /// Like [`TestRegistry::start`], for a registry that asks for a login ([`HTPASSWD`]).
    pub fn start_with_login() -> Option<Self> {
        Self::start_inner(true, IpAddr::V4(Ipv4Addr::LOCALHOST), false)
    }

    /// Like [`TestRegistry::start`], over plain HTTP on `host` (an address of this machine).
    pub fn start_on(host: IpAddr) -> Option<Self> {
        Self::start_inner(false, host, false)
    }

    /// Like [`TestRegistry::start`], over HTTPS only, on `host`, with a certificate for
    /// `host`, `127.0.0.1` and `localhost` signed by a fresh CA ([`TestRegistry::ca_file`]).
    pub fn start_tls(host: IpAddr) -> Option<Self> {
        Self::start_inner(false, host, true)
    }

    fn start_inner(htpasswd: bool, host: IpAddr, tls: bool) -> Option<Self> {
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
        let port = TcpListener::bind((host, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("htpasswd"), format!("{HTPASSWD}\n")).expect("htpasswd");
        let tls = tls.then(|| make_certificates(dir.path(), host));
        let mut registry = Self {
            dir,
            host,
            port,
            child: None,
            htpasswd,
            tls,
        };
        registry.resume();
        Some(registry)
    }

    /// `<host>:<port>` (`127.0.0.1:<port>` unless started on another address).
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The PEM of the CA that signed the certificate of a registry started with
    /// [`TestRegistry::start_tls`].
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// `oci://<host>:<port>/<path>`.
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
        let tls = match &self.tls {
            Some((certificate, key)) => format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                certificate.display(),
                key.display()
            ),
            None => String::new(),
        };
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {}\n{tls}{auth}",
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
            // Up once it answers, 401 included (a registry asking for a login); over TLS, once
            // it accepts connections (it listens only when it serves).
            let up = if self.tls.is_some() {
                TcpStream::connect((self.host, self.port)).is_ok()
            } else {
                matches!(
                    ureq::get(&url).call(),
                    Ok(_) | Err(ureq::Error::Status(401, _))
                )
            };
            if up {
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

/// Makes a CA (`ca.pem`) and a server certificate it signs (`server.pem`, `server.key`) for
/// `host`, `127.0.0.1` and `localhost` in `dir`, with `openssl`; returns the server's pair.
fn make_certificates(dir: &Path, host: IpAddr) -> (PathBuf, PathBuf) {
    std::fs::write(
        dir.join("openssl.cnf"),
        format!(
            "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = wasmlet test CA\n\
             [ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\n\
             subjectKeyIdentifier = hash\n\
             [server]\nbasicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature\n\
             extendedKeyUsage = serverAuth\nauthorityKeyIdentifier = keyid\n\
             subjectAltName = IP:{host},IP:127.0.0.1,DNS:localhost\n"
        ),
    )
    .expect("openssl config");
    let openssl = |args: &str| {
        let out = Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(dir)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    openssl(&format!(
        "req -x509 -config openssl.cnf -extensions ca {ec} -keyout ca.key -out ca.pem -days 2"
    ));
    openssl(&format!(
        "req -new -config openssl.cnf -subj /CN=registry {ec} -keyout server.key -out server.csr"
    ));
    openssl(
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial 2 -extfile openssl.cnf \
         -extensions server -days 2 -out server.pem",
    );
    (dir.join("server.pem"), dir.join("server.key"))
}

/// An IPv4 address of this machine that is not loopback, for a registry a client must not
/// reach over plain HTTP by default: the source address of a route out (no packet is sent),
/// else the first global address `ip` lists.
pub fn non_loopback_ipv4() -> Option<Ipv4Addr> {
    let routed = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|s| s.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).map(|()| s))
        .and_then(|s| s.local_addr())
        .ok()
        .and_then(|a| match a.ip() {
            IpAddr::V4(ip) if !ip.is_loopback() && !ip.is_unspecified() => Some(ip),
            _ => None,
        });
    routed.or_else(|| {
        let out = Command::new("ip")
            .args(["-4", "-o", "addr", "show", "scope", "global"])
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .skip_while(|word| *word != "inet")
            .nth(1)
            .and_then(|cidr| cidr.split('/').next()?.parse().ok())
    })
}
