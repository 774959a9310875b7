use super::*;
use k8s_openapi::api::core::v1::{DownwardAPIVolumeFile, ResourceFieldSelector};

#[test]
fn host_path_types_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    assert!(host_path_check(&missing, "File")
        .unwrap_err()
        .to_string()
        .contains("does not exist"));
    assert!(host_path_check(&missing, "Directory").is_err());
    host_path_check(&missing, "DirectoryOrCreate").unwrap();
    assert!(missing.is_dir());
    assert!(host_path_check(&missing, "File")
        .unwrap_err()
        .to_string()
        .contains("is not a file"));
    let file = dir.path().join("f");
    host_path_check(&file, "FileOrCreate").unwrap();
    assert!(file.is_file());
    assert!(host_path_check(&file, "Socket")
        .unwrap_err()
        .to_string()
        .contains("is not a socket"));
    assert!(host_path_check(&file, "Sideways").is_err());
}

#[test]
fn atomic_writer_layout_and_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let vol = dir.path().join("v");
    let files = vec![
        FileProjection::new("labels", "app=\"web\"", 0o644),
        FileProjection::new("sub/name", "web", 0o644),
    ];
    atomic_write(&vol, &files).unwrap();
    assert_eq!(
        std::fs::read_to_string(vol.join("labels")).unwrap(),
        "app=\"web\""
    );
    assert_eq!(
        std::fs::read_to_string(vol.join("sub/name")).unwrap(),
        "web"
    );
    let first = std::fs::read_link(vol.join("..data")).unwrap();
    assert!(first.to_string_lossy().starts_with(".."));
    atomic_write(&vol, &files).unwrap();
    assert_eq!(
        std::fs::read_link(vol.join("..data")).unwrap(),
        first,
        "unchanged data is not rewritten"
    );
    let changed = vec![
        FileProjection::new("labels", "app=\"api\"", 0o644),
        files[1].clone(),
    ];
    std::thread::sleep(std::time::Duration::from_millis(2));
    atomic_write(&vol, &changed).unwrap();
    assert_eq!(
        std::fs::read_to_string(vol.join("labels")).unwrap(),
        "app=\"api\""
    );
    assert!(
        !vol.join(&first).exists(),
        "the old timestamped directory is removed"
    );
}

#[test]
fn sub_paths_stay_inside() {
    assert!(valid_sub_path("a/b"));
    assert!(!valid_sub_path("../etc"));
    assert!(!valid_sub_path("/etc"));
    assert!(!valid_sub_path("a/../../b"));
}

#[test]
fn errors_read_as_before() {
    let error = VolumeError {
        volume: "data".into(),
        reason: VolumeProblem::InvalidSubPath {
            sub_path: "../x".into(),
        },
    };
    assert_eq!(
        error.to_string(),
        r#"MountVolume.SetUp failed for volume "data" : subPath "../x" must be a relative path inside the volume"#
    );
    let missing = Path::new("/nonexistent/wasmlet-test");
    assert_eq!(
        host_path_check(missing, "Socket").unwrap_err().to_string(),
        "hostPath type check failed: /nonexistent/wasmlet-test does not exist"
    );
    assert_eq!(
        host_path_check(missing, "Sideways")
            .unwrap_err()
            .to_string(),
        r#"unknown hostPath type "Sideways""#
    );
    let no_container = DownwardAPIVolumeFile {
        path: "cpu".into(),
        resource_field_ref: Some(ResourceFieldSelector {
            container_name: Some("nope".into()),
            resource: "limits.cpu".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        downward_files(&Pod::default(), &[no_container], 0o644, 1)
            .unwrap_err()
            .to_string(),
        r#"resourceFieldRef names no container "nope""#
    );
}

mod api_objects;
