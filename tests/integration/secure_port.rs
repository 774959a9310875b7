//! The authenticated port (`port`) of a standalone node: client certificates signed by the
//! configured client CA (made here with rcgen), the local rule (`system:masters` only), the
//! self-signed serving certificate reused across restarts, and what the read-only port no
//! longer serves.

use crate::harness::busybox_pod;
use std::time::Duration;
use wasmlet_test_support::secure_port::{secure_node, wait_for_port, SecureClient, TestPki};

#[test]
fn standalone_client_certificates_and_the_local_rule() {
    let pki = TestPki::new("wasmlet-test-ca");
    let mut node = secure_node("t-secure", &pki);
    node.write_manifest(
        "hello.yaml",
        &busybox_pod("hello", "", "echo hello over https; exec sleep 3600"),
    );
    node.wait_phase("hello", "Running", Duration::from_secs(30));
    let admin = pki.client("admin", &["system:masters"]);
    let client = SecureClient::new(&node, Some(&admin));
    wait_for_port(&node, &client);

    let pods: serde_json::Value = serde_json::from_str(&client.get_ok("/pods").unwrap()).unwrap();
    assert!(
        pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["metadata"]["name"] == "hello-t-secure"),
        "{pods}"
    );
    let log = node.wait_for("the log over https", Duration::from_secs(10), |_| {
        client
            .get_ok("/containerLogs/default/hello-t-secure/main")
            .filter(|t| !t.is_empty())
    });
    assert_eq!(log, "hello over https\n");
    let configz: serde_json::Value =
        serde_json::from_str(&client.get_ok("/configz").unwrap()).unwrap();
    assert_eq!(
        configz["kubeletconfig"]["authentication"]["x509"]["clientCAFile"],
        pki.ca_file().display().to_string()
    );
    assert_eq!(
        client.get("/containerLogs/default/nope/main").unwrap().0,
        404
    );

    // Followers that go away free their connection, file and task at once (the log is idle:
    // nothing is written that would fail).
    let pid = node.pid().unwrap();
    let fds = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count()
    };
    let before = fds();
    for _ in 0..1000 {
        let mut body = client
            .stream("/containerLogs/default/hello-t-secure/main?follow=true")
            .unwrap();
        let mut first = [0u8; 5];
        std::io::Read::read_exact(&mut body, &mut first).unwrap();
        assert_eq!(&first, b"hello");
    }
    node.wait_for(
        "the 1000 aborted followers to be freed",
        Duration::from_secs(20),
        |_| (fds() <= before + 2).then_some(()),
    );

    // No certificate: 401, for every path.
    let anonymous = SecureClient::new(&node, None);
    for path in [
        "/pods",
        "/healthz",
        "/containerLogs/default/hello-t-secure/main",
    ] {
        assert_eq!(
            anonymous.get(path).unwrap(),
            (401, "Unauthorized".to_string()),
            "{path}"
        );
    }
    // A certificate of the right CA outside system:masters: 403 with upstream's message.
    let viewer = SecureClient::new(&node, Some(&pki.client("viewer", &["ops"])));
    assert_eq!(
        viewer
            .get("/containerLogs/default/hello-t-secure/main")
            .unwrap(),
        (
            403,
            "Forbidden (user=viewer, verb=get, resource=nodes, subresource(s)=[proxy])\n"
                .to_string()
        )
    );
    // A certificate of another CA: the handshake fails, no HTTP answer at all.
    let stranger = TestPki::new("another-ca").client("admin", &["system:masters"]);
    let refused = SecureClient::new(&node, Some(&stranger)).get("/pods");
    assert!(refused.is_err(), "{refused:?}");
    // ... and the node keeps serving everyone else.
    assert!(client.get_ok("/healthz").is_some());

    // The read-only port keeps /pods but not the logs (405 as upstream).
    let read_only = ureq::get(&format!(
        "http://127.0.0.1:{}/containerLogs/default/hello-t-secure/main",
        node.port
    ))
    .call();
    match read_only {
        Err(ureq::Error::Status(405, _)) => {}
        other => panic!("expected 405 from the read-only port, got {other:?}"),
    }
    assert!(node.try_get("/pods").is_some());

    // The self-signed serving certificate survives a restart (the pinned client still works).
    let served = std::fs::read(node.dir.path().join("root/pki/kubelet.crt")).unwrap();
    node.restart();
    wait_for_port(&node, &client);
    assert_eq!(
        std::fs::read(node.dir.path().join("root/pki/kubelet.crt")).unwrap(),
        served
    );
    assert!(client.get_ok("/pods").is_some());
}
