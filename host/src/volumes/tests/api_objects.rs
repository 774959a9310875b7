//! configMap, secret and projected volumes against an in-memory object source.

use super::super::*;
use crate::objects::fake::FakeObjects;
use crate::objects::{ObjectError, ObjectKind};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapProjection, ConfigMapVolumeSource, DownwardAPIProjection,
    DownwardAPIVolumeFile, KeyToPath, ObjectFieldSelector, PodSpec, ProjectedVolumeSource,
    SecretVolumeSource, ServiceAccountTokenProjection, VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use std::os::unix::fs::PermissionsExt;

const UID: &str = "0123-uid";

fn api_pod(volumes: Vec<Volume>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some(UID.into()),
            annotations: Some(
                [("kubernetes.io/config.source".to_string(), "api".to_string())].into(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec {
            volumes: Some(volumes),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn config_map_volume(name: &str, source: ConfigMapVolumeSource) -> Volume {
    Volume {
        name: name.into(),
        config_map: Some(source),
        ..Default::default()
    }
}

fn item(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
    KeyToPath {
        key: key.into(),
        path: path.into(),
        mode,
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Sets the pod's volumes up once; the error is the waiting containers' message.
async fn set_up_once(
    pod: &Pod,
    root: &Path,
    objects: &FakeObjects,
) -> Result<HashMap<String, PathBuf>, String> {
    let mut volumes = PodVolumes::default();
    let host = VolumeHost {
        root_dir: root,
        memory_backed: false,
    };
    volumes
        .sync(pod, &host, objects)
        .await
        .map_err(|w| w.error.to_string())?;
    Ok(volumes.paths().cloned().unwrap_or_default())
}

#[tokio::test]
async fn config_map_volume_holds_every_key_with_the_default_mode() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.put_config_map_object(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("settings".into()),
            ..Default::default()
        },
        data: Some([("a.conf".to_string(), "x=1".to_string())].into()),
        binary_data: Some([("blob".to_string(), ByteString(vec![0, 159, 146, 150]))].into()),
        ..Default::default()
    });
    let pod = api_pod(vec![config_map_volume(
        "config",
        ConfigMapVolumeSource {
            name: "settings".into(),
            ..Default::default()
        },
    )]);
    let paths = set_up_once(&pod, root.path(), &objects).await.unwrap();
    let dir = &paths["config"];
    assert_eq!(
        *dir,
        root.path()
            .join(format!("pods/{UID}/volumes/kubernetes.io~configmap/config"))
    );
    assert_eq!(read(&dir.join("a.conf")), "x=1");
    assert_eq!(std::fs::read(dir.join("blob")).unwrap(), [0, 159, 146, 150]);
    assert_eq!(mode(&dir.join("a.conf")), 0o644);
    assert!(dir.join("a.conf").is_symlink(), "names go through ..data");
}

#[tokio::test]
async fn items_choose_keys_paths_and_modes() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.put_config_map("ns", "settings", &[("a", "1"), ("b", "2"), ("c", "3")]);
    let pod = api_pod(vec![config_map_volume(
        "config",
        ConfigMapVolumeSource {
            name: "settings".into(),
            default_mode: Some(0o600),
            items: Some(vec![
                item("a", "conf/a.txt", Some(0o400)),
                item("b", "b.txt", None),
            ]),
            ..Default::default()
        },
    )]);
    let paths = set_up_once(&pod, root.path(), &objects).await.unwrap();
    let dir = &paths["config"];
    assert_eq!(read(&dir.join("conf/a.txt")), "1");
    assert_eq!(mode(&dir.join("conf/a.txt")), 0o400);
    assert_eq!(mode(&dir.join("b.txt")), 0o600);
    assert!(
        !dir.join("c").exists(),
        "keys items do not name are left out"
    );
}

#[tokio::test]
async fn optional_objects_and_keys_may_be_missing() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.put_config_map("ns", "present", &[("a", "1")]);
    let pod = api_pod(vec![
        config_map_volume(
            "absent",
            ConfigMapVolumeSource {
                name: "nowhere".into(),
                optional: Some(true),
                ..Default::default()
            },
        ),
        config_map_volume(
            "partial",
            ConfigMapVolumeSource {
                name: "present".into(),
                optional: Some(true),
                items: Some(vec![item("a", "a", None), item("zz", "zz", None)]),
                ..Default::default()
            },
        ),
    ]);
    let paths = set_up_once(&pod, root.path(), &objects).await.unwrap();
    assert!(paths["absent"].join("..data").is_dir(), "an empty volume");
    assert_eq!(std::fs::read_dir(&paths["absent"]).unwrap().count(), 2);
    assert_eq!(read(&paths["partial"].join("a")), "1");
    assert!(!paths["partial"].join("zz").exists());
}

#[tokio::test]
async fn a_missing_object_keeps_the_pod_waiting_with_back_off() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    let pod = api_pod(vec![config_map_volume(
        "config",
        ConfigMapVolumeSource {
            name: "settings".into(),
            ..Default::default()
        },
    )]);
    let host = VolumeHost {
        root_dir: root.path(),
        memory_backed: false,
    };
    let mut volumes = PodVolumes::default();
    let first = volumes.sync(&pod, &host, &objects).await.unwrap_err();
    assert_eq!(
        first.error.to_string(),
        r#"MountVolume.SetUp failed for volume "config" : configmap "settings" not found"#
    );
    assert_eq!(first.retry, Duration::from_millis(500));
    let second = volumes.sync(&pod, &host, &objects).await.unwrap_err();
    assert_eq!(second.retry, Duration::from_secs(1));
    assert!(volumes.paths().is_none());
    objects.put_config_map("ns", "settings", &[("k", "v")]);
    volumes.sync(&pod, &host, &objects).await.unwrap();
    assert_eq!(read(&volumes.paths().unwrap()["config"].join("k")), "v");
}

#[tokio::test]
async fn a_missing_key_is_an_error_unless_optional() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.put_config_map("ns", "settings", &[("a", "1")]);
    objects.put_secret("ns", "creds", &[("user", b"u")]);
    let pod = api_pod(vec![config_map_volume(
        "config",
        ConfigMapVolumeSource {
            name: "settings".into(),
            items: Some(vec![item("k", "k", None)]),
            ..Default::default()
        },
    )]);
    assert_eq!(
        set_up_once(&pod, root.path(), &objects).await.unwrap_err(),
        r#"MountVolume.SetUp failed for volume "config" : configmap references non-existent config key: k"#
    );
    let pod = api_pod(vec![Volume {
        name: "creds".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some("creds".into()),
            items: Some(vec![item("password", "password", None)]),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    assert_eq!(
        set_up_once(&pod, root.path(), &objects).await.unwrap_err(),
        r#"MountVolume.SetUp failed for volume "creds" : references non-existent secret key: password"#
    );
}

#[tokio::test]
async fn secret_bytes_are_written_as_they_are() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    let raw: &[u8] = &[0xff, 0x00, b'\n', 0xfe];
    objects.put_secret("ns", "creds", &[("key.bin", raw), ("user", b"admin")]);
    let pod = api_pod(vec![Volume {
        name: "creds".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some("creds".into()),
            default_mode: Some(0o440),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    let paths = set_up_once(&pod, root.path(), &objects).await.unwrap();
    let dir = &paths["creds"];
    assert!(dir.ends_with("kubernetes.io~secret/creds"));
    assert_eq!(std::fs::read(dir.join("key.bin")).unwrap(), raw);
    assert_eq!(read(&dir.join("user")), "admin");
    assert_eq!(mode(&dir.join("user")), 0o440);
    let missing = api_pod(vec![Volume {
        name: "creds".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some("gone".into()),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    assert_eq!(
        set_up_once(&missing, root.path(), &objects)
            .await
            .unwrap_err(),
        r#"MountVolume.SetUp failed for volume "creds" : secret "gone" not found"#
    );
}

#[tokio::test]
async fn later_syncs_rewrite_changed_content_and_keep_it_on_failure() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.put_config_map("ns", "settings", &[("a", "1"), ("b", "2")]);
    let pod = api_pod(vec![
        config_map_volume(
            "config",
            ConfigMapVolumeSource {
                name: "settings".into(),
                ..Default::default()
            },
        ),
        Volume {
            name: "scratch".into(),
            empty_dir: Some(Default::default()),
            ..Default::default()
        },
    ]);
    let host = VolumeHost {
        root_dir: root.path(),
        memory_backed: false,
    };
    let mut volumes = PodVolumes::default();
    volumes.sync(&pod, &host, &objects).await.unwrap();
    let paths = volumes.paths().unwrap().clone();
    let dir = &paths["config"];
    let first = std::fs::read_link(dir.join("..data")).unwrap();
    // The emptyDir is set up once: what a container did to it stays.
    std::fs::set_permissions(&paths["scratch"], std::fs::Permissions::from_mode(0o700)).unwrap();

    volumes.sync(&pod, &host, &objects).await.unwrap();
    assert_eq!(std::fs::read_link(dir.join("..data")).unwrap(), first);
    assert_eq!(mode(&paths["scratch"]), 0o700);

    std::thread::sleep(Duration::from_millis(2));
    objects.put_config_map("ns", "settings", &[("a", "one")]);
    volumes.sync(&pod, &host, &objects).await.unwrap();
    assert_eq!(read(&dir.join("a")), "one");
    assert!(!dir.join("b").exists(), "a removed key disappears");
    assert!(std::fs::symlink_metadata(dir.join("b")).is_err());

    objects.remove_config_map("ns", "settings");
    volumes.sync(&pod, &host, &objects).await.unwrap();
    assert_eq!(
        read(&dir.join("a")),
        "one",
        "a failed refresh keeps the content"
    );
    assert_eq!(volumes.paths().unwrap().len(), 2);
}

/// The volume the ServiceAccount admission plugin gives every API pod.
fn kube_api_access() -> Volume {
    Volume {
        name: "kube-api-access-x7k2p".into(),
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(0o644),
            sources: Some(vec![
                VolumeProjection {
                    service_account_token: Some(ServiceAccountTokenProjection {
                        expiration_seconds: Some(3607),
                        path: "token".into(),
                        audience: None,
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    config_map: Some(ConfigMapProjection {
                        name: "kube-root-ca.crt".into(),
                        items: Some(vec![item("ca.crt", "ca.crt", None)]),
                        optional: None,
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    downward_api: Some(DownwardAPIProjection {
                        items: Some(vec![DownwardAPIVolumeFile {
                            path: "namespace".into(),
                            field_ref: Some(ObjectFieldSelector {
                                api_version: Some("v1".into()),
                                field_path: "metadata.namespace".into(),
                            }),
                            ..Default::default()
                        }]),
                    }),
                    ..Default::default()
                },
            ]),
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn kube_api_access_has_token_ca_and_namespace() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.put_config_map(
        "ns",
        "kube-root-ca.crt",
        &[("ca.crt", "-----BEGIN CERTIFICATE-----")],
    );
    let mut pod = api_pod(vec![kube_api_access()]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.service_account_name = Some("builder".into());
    }
    let paths = set_up_once(&pod, root.path(), &objects).await.unwrap();
    let dir = &paths["kube-api-access-x7k2p"];
    assert!(dir.ends_with("kubernetes.io~projected/kube-api-access-x7k2p"));
    assert_eq!(read(&dir.join("token")), "token-builder");
    assert_eq!(read(&dir.join("ca.crt")), "-----BEGIN CERTIFICATE-----");
    assert_eq!(read(&dir.join("namespace")), "ns");
    for name in ["token", "ca.crt", "namespace"] {
        assert_eq!(mode(&dir.join(name)), 0o644, "{name}");
    }
    let requests = objects.token_requests.lock().clone();
    assert_eq!(requests.len(), 1);
    let (uid, request) = &requests[0];
    assert_eq!(uid, UID);
    assert_eq!(request.service_account, "builder");
    assert!(request.audiences.is_empty(), "the API server's audience");
    assert_eq!(request.expiration_seconds, 3607);
}

#[tokio::test]
async fn projected_sources_report_every_failure() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.set_token(Err(ObjectError::Forbidden {
        kind: ObjectKind::ServiceAccountToken,
        namespace: "ns".into(),
        name: "default".into(),
        message: "403 Forbidden: no".into(),
    }));
    let pod = api_pod(vec![kube_api_access()]);
    assert_eq!(
        set_up_once(&pod, root.path(), &objects).await.unwrap_err(),
        r#"MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : [failed to fetch token: serviceaccount ns/default is forbidden to this node: 403 Forbidden: no, configmap "kube-root-ca.crt" not found]"#
    );
}

#[tokio::test]
async fn item_paths_stay_inside_the_volume() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    objects.put_config_map("ns", "settings", &[("a", "1")]);
    for bad in ["../escape", "/abs", "..data", "x/..y"] {
        let pod = api_pod(vec![config_map_volume(
            "config",
            ConfigMapVolumeSource {
                name: "settings".into(),
                items: Some(vec![item("a", bad, None)]),
                ..Default::default()
            },
        )]);
        let error = set_up_once(&pod, root.path(), &objects).await.unwrap_err();
        assert!(error.contains("must be relative"), "{bad}: {error}");
    }
}

#[test]
fn only_api_pods_may_name_api_objects() {
    let volume = config_map_volume(
        "config",
        ConfigMapVolumeSource {
            name: "settings".into(),
            ..Default::default()
        },
    );
    let api = api_pod(vec![volume.clone()]);
    assert_eq!(unsupported(&api, &volume), None);
    assert_eq!(unsupported(&api, &kube_api_access()), None);
    let mut static_pod = api.clone();
    static_pod.metadata.annotations = Some(
        [(
            "kubernetes.io/config.source".to_string(),
            "file".to_string(),
        )]
        .into(),
    );
    assert!(unsupported(&static_pod, &volume)
        .is_some_and(|why| why.contains("static pods cannot use them")));
    assert!(unsupported(&static_pod, &kube_api_access()).is_some());
    let trust_bundle = Volume {
        name: "bundle".into(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(vec![VolumeProjection {
                cluster_trust_bundle: Some(Default::default()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(unsupported(&api, &trust_bundle).is_some_and(|why| why.contains("clusterTrustBundle")));
    let downward_only = Volume {
        name: "info".into(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(vec![VolumeProjection {
                downward_api: Some(Default::default()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(unsupported(&static_pod, &downward_only), None);
}

/// Upstream's downward API refresh: labels and annotations changed on a running pod reach its
/// downwardAPI and projected volumes at the next sync (the worker syncs with the new pod).
#[tokio::test]
async fn labels_and_annotations_changed_on_a_running_pod_are_rewritten_at_the_next_sync() {
    let root = tempfile::tempdir().unwrap();
    let objects = FakeObjects::default();
    let field = |path: &str, field_path: &str| DownwardAPIVolumeFile {
        path: path.into(),
        field_ref: Some(ObjectFieldSelector {
            field_path: field_path.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut pod = api_pod(vec![
        Volume {
            name: "podinfo".into(),
            downward_api: Some(k8s_openapi::api::core::v1::DownwardAPIVolumeSource {
                items: Some(vec![
                    field("labels", "metadata.labels"),
                    field("annotations", "metadata.annotations['note']"),
                ]),
                ..Default::default()
            }),
            ..Default::default()
        },
        Volume {
            name: "projected".into(),
            projected: Some(ProjectedVolumeSource {
                sources: Some(vec![VolumeProjection {
                    downward_api: Some(DownwardAPIProjection {
                        items: Some(vec![field("labels", "metadata.labels")]),
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        },
    ]);
    pod.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("note".into(), "first".into());
    let host = VolumeHost {
        root_dir: root.path(),
        memory_backed: false,
    };
    let mut volumes = PodVolumes::default();
    volumes.sync(&pod, &host, &objects).await.unwrap();
    let paths = volumes.paths().unwrap().clone();
    assert_eq!(read(&paths["podinfo"].join("labels")), "tier=\"web\"");
    assert_eq!(read(&paths["podinfo"].join("annotations")), "first");
    assert_eq!(read(&paths["projected"].join("labels")), "tier=\"web\"");

    std::thread::sleep(Duration::from_millis(2));
    pod.metadata.labels = Some(
        [
            ("tier".to_string(), "api".to_string()),
            ("added".to_string(), "yes".to_string()),
        ]
        .into(),
    );
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("note".into(), "second".into());
    volumes.sync(&pod, &host, &objects).await.unwrap();
    assert_eq!(
        read(&paths["podinfo"].join("labels")),
        "added=\"yes\"\ntier=\"api\""
    );
    assert_eq!(read(&paths["podinfo"].join("annotations")), "second");
    assert_eq!(
        read(&paths["projected"].join("labels")),
        "added=\"yes\"\ntier=\"api\""
    );
}
