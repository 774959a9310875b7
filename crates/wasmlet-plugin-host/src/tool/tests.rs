use super::*;

/// A fixture whose pod names an unknown QoS class fails on that field, before any plugin
/// is loaded; a private working directory is made fresh, mode 0700, and removed on drop.
#[test]
fn a_fixture_with_an_unknown_qos_names_the_field() {
    let dir = private_temp_dir().expect("temporary directory");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path())
            .expect("metadata")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    let fixture = dir.path().join("fixture.yaml");
    std::fs::write(&fixture, "pods:\n- name: a\n  qos: Premium\n").expect("write fixture");
    let error = test_plugin(
        Path::new("/nonexistent.wasm"),
        &fixture,
        "{}",
        &Capabilities::default(),
    )
    .expect_err("an unknown QoS class is refused");
    match error {
        ToolError::Fixture { field, message, .. } => {
            assert_eq!(field, "pods[0].qos");
            assert!(message.contains("Premium"), "{message}");
        }
        other => panic!("not a fixture error: {other}"),
    }
    let path = dir.path().to_path_buf();
    drop(dir);
    assert!(!path.exists());
}
