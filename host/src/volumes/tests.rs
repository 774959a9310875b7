use super::*;
use k8s_openapi::api::core::v1::{DownwardAPIVolumeFile, ResourceFieldSelector};
use std::os::unix::fs::PermissionsExt;

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

/// Every file under `dir` with its bytes and mode, symlinks by their target.
fn snapshot(dir: &Path) -> Vec<(PathBuf, String, u32)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        for entry in std::fs::read_dir(&path).unwrap().flatten() {
            let meta = entry.path().symlink_metadata().unwrap();
            let content = if meta.is_dir() {
                pending.push(entry.path());
                String::new()
            } else if meta.is_symlink() {
                std::fs::read_link(entry.path())
                    .unwrap()
                    .display()
                    .to_string()
            } else {
                std::fs::read_to_string(entry.path()).unwrap()
            };
            out.push((entry.path(), content, meta.permissions().mode()));
        }
    }
    out.sort();
    out
}

/// A container with the volume writable plants symlinks out of it: the writer replaces them
/// and writes, chmods and deletes nothing outside.
#[test]
fn atomic_writer_never_follows_a_planted_symlink_out_of_the_volume() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("labels"), "precious").unwrap();
    std::fs::set_permissions(
        outside.path().join("labels"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::create_dir(outside.path().join("sub")).unwrap();
    std::fs::write(outside.path().join("sub/name"), "precious").unwrap();
    let before = snapshot(outside.path());

    let vol = dir.path().join("v");
    let files = vec![
        FileProjection::new("labels", "app=\"web\"", 0o644),
        FileProjection::new("sub/name", "web", 0o644),
    ];
    atomic_write(&vol, &files).unwrap();
    let plant = |name: &str, to: &Path| {
        std::fs::remove_file(vol.join(name)).unwrap();
        symlink(to, vol.join(name)).unwrap();
    };
    plant("..data", outside.path());
    plant("labels", &outside.path().join("labels"));
    plant("sub", &outside.path().join("sub"));
    let changed = vec![
        FileProjection::new("labels", "app=\"api\"", 0o640),
        FileProjection::new("sub/name", "api", 0o600),
    ];
    atomic_write(&vol, &changed).unwrap();
    assert_eq!(snapshot(outside.path()), before, "nothing outside changed");
    assert_eq!(
        std::fs::read_to_string(vol.join("labels")).unwrap(),
        "app=\"api\""
    );
    assert_eq!(
        std::fs::read_to_string(vol.join("sub/name")).unwrap(),
        "api"
    );
    assert_eq!(
        std::fs::read_link(vol.join("sub")).unwrap(),
        Path::new("..data/sub")
    );
    assert!(std::fs::read_link(vol.join("..data"))
        .unwrap()
        .to_string_lossy()
        .starts_with(".."));

    // The same payload again, with only a top-level name swapped: repaired too.
    plant("labels", outside.path());
    atomic_write(&vol, &changed).unwrap();
    assert_eq!(snapshot(outside.path()), before, "nothing outside changed");
    assert_eq!(
        std::fs::read_to_string(vol.join("labels")).unwrap(),
        "app=\"api\""
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

/// configMap, secret, downwardAPI and projected volumes are read-only in every container, as
/// upstream mounts them; other volumes follow the `volumeMount`.
#[test]
fn api_data_volumes_are_mounted_read_only() {
    let pod: Pod = wasmlet_plugin_host::yaml::from_str(
        r#"
metadata: {name: p, uid: u}
spec:
  containers:
  - name: main
    image: i
    volumeMounts:
    - {name: config, mountPath: /config}
    - {name: token, mountPath: /token, readOnly: false}
    - {name: info, mountPath: /info}
    - {name: creds, mountPath: /creds}
    - {name: scratch, mountPath: /scratch}
    - {name: cache, mountPath: /cache, readOnly: true}
  volumes:
  - {name: config, configMap: {name: c}}
  - {name: token, projected: {sources: []}}
  - {name: info, downwardAPI: {items: []}}
  - {name: creds, secret: {secretName: s}}
  - {name: scratch, emptyDir: {}}
  - {name: cache, emptyDir: {}}
"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let paths: HashMap<String, PathBuf> = ["config", "token", "info", "creds", "scratch", "cache"]
        .iter()
        .map(|n| (n.to_string(), dir.path().join(n)))
        .collect();
    let container = &pod.spec.as_ref().unwrap().containers[0];
    let read_only: Vec<(String, bool)> = mounts(&pod, container, &paths, dir.path())
        .unwrap()
        .into_iter()
        .map(|m| (m.container_path, m.readonly))
        .collect();
    assert_eq!(
        read_only,
        [
            ("/config", true),
            ("/token", true),
            ("/info", true),
            ("/creds", true),
            ("/scratch", false),
            ("/cache", true),
        ]
        .map(|(p, r)| (p.to_string(), r))
    );
}

#[test]
fn cleanup_unlinks_planted_symlinks_and_never_follows_them() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("data")).unwrap();
    std::fs::write(outside.path().join("data/keep"), "node data").unwrap();
    std::fs::write(outside.path().join("file"), "node file").unwrap();

    let volume = volume_dir(root.path(), "uid-1", "empty-dir", "scratch");
    std::fs::create_dir_all(volume.join("nested")).unwrap();
    // What a container can plant in its volume: links to a directory and a file of the node,
    // one deeper down, one dangling, and one to the volume's own parent.
    symlink(outside.path().join("data"), volume.join("escape")).unwrap();
    symlink(outside.path().join("file"), volume.join("file-link")).unwrap();
    symlink(outside.path(), volume.join("nested/up")).unwrap();
    symlink("/nonexistent/target", volume.join("dangling")).unwrap();
    symlink("../../..", volume.join("parent")).unwrap();

    cleanup(root.path(), "uid-1");

    assert!(
        !pod_dir(root.path(), "uid-1").exists(),
        "the pod's directory is gone"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("data/keep")).unwrap(),
        "node data"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("file")).unwrap(),
        "node file"
    );
    assert!(
        root.path().join("pods").is_dir(),
        "the pods directory stays"
    );
}
