//! WASI is deny-all unless the config grants a directory or environment.

use super::*;

/// What `guest_wasi` reports it could do with `config` and `capabilities`.
fn wasi_report(setup: &Setup) -> String {
    let entry = &setup.registry.report()["plugins"][0];
    assert_eq!(entry["state"], "serving", "{entry}");
    let s = snapshot(&mut Lcg(3), 3, policy::Signal::MemoryAvailable);
    match setup.registry.rank(&s).decided_by {
        DecidedBy::BuiltIn { reason } => reason,
        other => panic!("guest_wasi always errs: {other:?}"),
    }
}

/// A captured log for one thread's plugin calls.
#[derive(Clone, Default)]
struct CapturedLog(Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn wasi_is_deny_all_unless_the_config_grants_a_directory_or_environment() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("prefixes"), "registry.local/\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = format!(
        "  config: {{read: /data/prefixes, write: /data/out, env: MODE, connect: \"127.0.0.1:{port}\", print: hello from the guest}}\n"
    );

    // No grant: no file, no environment, no network; stdout and stderr reach the host log.
    let log = CapturedLog::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let setup = tracing::subscriber::with_default(subscriber, || {
        registry(&plugin(
            "wasi",
            "eviction-policy",
            &components::GUEST_WASI.path(),
            &config,
        ))
    });
    let report = wasi_report(&setup);
    assert!(report.contains("read=err:"), "{report}");
    assert!(report.contains("write=err:"), "{report}");
    assert!(report.contains("env=unset"), "{report}");
    assert!(report.contains("connect=err:"), "{report}");
    let logged = String::from_utf8(log.0.lock().clone()).unwrap();
    assert!(
        logged.contains("hello from the guest")
            && logged.contains("plugin=\"wasi\"")
            && logged.contains("stream=\"stdout\""),
        "stdout is logged under the plugin's name: {logged}"
    );
    assert!(
        logged.contains("hello from the guest (stderr)") && logged.contains("stream=\"stderr\""),
        "{logged}"
    );

    // A read-only grant (the default) and an environment variable.
    let grants = format!(
        "  capabilities:\n    directories: [{{hostPath: {}, guestPath: /data}}]\n    environment: {{MODE: strict}}\n",
        data.path().display()
    );
    let setup = registry(&plugin(
        "wasi",
        "eviction-policy",
        &components::GUEST_WASI.path(),
        &format!("{config}{grants}"),
    ));
    let report = wasi_report(&setup);
    assert!(report.contains("read=ok:registry.local/"), "{report}");
    assert!(
        report.contains("write=err:"),
        "read-only by default: {report}"
    );
    assert!(!data.path().join("out").exists());
    assert!(report.contains("env=strict"), "{report}");
    assert!(
        report.contains("connect=err:"),
        "no grant opens the network: {report}"
    );

    // A writable grant.
    let writable = format!(
        "  capabilities:\n    directories: [{{hostPath: {}, guestPath: /data, writable: true}}]\n",
        data.path().display()
    );
    let setup = registry(&plugin(
        "wasi",
        "eviction-policy",
        &components::GUEST_WASI.path(),
        &format!("{config}{writable}"),
    ));
    let report = wasi_report(&setup);
    assert!(report.contains("write=ok:"), "{report}");
    assert_eq!(std::fs::read(data.path().join("out")).unwrap(), b"x");

    // A granted directory that does not exist: the version is refused with the reason.
    let missing = data.path().join("missing");
    let setup = registry(&plugin(
        "wasi",
        "eviction-policy",
        &components::GUEST_WASI.path(),
        &format!(
            "  capabilities: {{directories: [{{hostPath: {}}}]}}\n",
            missing.display()
        ),
    ));
    let entry = setup.registry.report()["plugins"][0].clone();
    assert_eq!(entry["state"], "notLoaded", "{entry}");
    let reason = entry["lastRejected"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("cannot open granted directory") && reason.contains("missing"),
        "{reason}"
    );
    drop(listener);
}
