use super::*;

/// What a kind answers, as one row of the table below.
#[derive(Debug, PartialEq, Eq)]
struct Answers {
    kind: &'static str,
    requires_remount: bool,
    read_only: bool,
    needs_api_objects: bool,
    refused_for_api_pod: Option<&'static str>,
    refused_for_static_pod: Option<&'static str>,
}

fn name(kind: &VolumeKind<'_>) -> &'static str {
    match kind {
        VolumeKind::EmptyDir(_) => "emptyDir",
        VolumeKind::HostPath(_) => "hostPath",
        VolumeKind::DownwardApi(_) => "downwardAPI",
        VolumeKind::ConfigMap(_) => "configMap",
        VolumeKind::Secret(_) => "secret",
        VolumeKind::Projected(_) => "projected",
        VolumeKind::Unsupported => "unsupported",
    }
}

fn answers(volume_yaml: &str) -> Answers {
    let volume: Volume = wasmlet_plugin_host::yaml::from_str(volume_yaml)
        .unwrap_or_else(|e| panic!("{volume_yaml}: {e}"));
    let kind = VolumeKind::of(&volume);
    Answers {
        kind: name(&kind),
        requires_remount: kind.requires_remount(),
        read_only: kind.read_only(),
        needs_api_objects: kind.needs_api_objects(),
        refused_for_api_pod: kind.unsupported(true),
        refused_for_static_pod: kind.unsupported(false),
    }
}

#[test]
fn each_volume_source_derives_its_kind_and_answers() {
    // (case, volume, kind, requires_remount, read_only, needs_api_objects, refused for an API
    // pod, refused for a static pod)
    type Row = (
        &'static str,
        &'static str,
        &'static str,
        bool,
        bool,
        bool,
        Option<&'static str>,
        Option<&'static str>,
    );
    let none = None;
    let api_only = Some(STATIC_POD_API_OBJECTS);
    let unsupported_type = Some(UNSUPPORTED_TYPE);
    let unsupported_projection = Some(UNSUPPORTED_PROJECTION);
    let table: [Row; 14] = [
        (
            "emptyDir on disk",
            "{name: v, emptyDir: {}}",
            "emptyDir",
            false,
            false,
            false,
            none,
            none,
        ),
        (
            "emptyDir in memory",
            "{name: v, emptyDir: {medium: Memory, sizeLimit: 1Mi}}",
            "emptyDir",
            false,
            false,
            false,
            none,
            none,
        ),
        (
            "hostPath",
            "{name: v, hostPath: {path: /var/log, type: Directory}}",
            "hostPath",
            false,
            false,
            false,
            none,
            none,
        ),
        (
            "downwardAPI",
            "{name: v, downwardAPI: {items: []}}",
            "downwardAPI",
            true,
            true,
            false,
            none,
            none,
        ),
        (
            "configMap",
            "{name: v, configMap: {name: c}}",
            "configMap",
            true,
            true,
            true,
            none,
            api_only,
        ),
        (
            "secret",
            "{name: v, secret: {secretName: s}}",
            "secret",
            true,
            true,
            true,
            none,
            api_only,
        ),
        (
            "projected without sources",
            "{name: v, projected: {}}",
            "projected",
            true,
            true,
            false,
            none,
            none,
        ),
        (
            "projected downwardAPI",
            "{name: v, projected: {sources: [{downwardAPI: {items: []}}]}}",
            "projected",
            true,
            true,
            false,
            none,
            none,
        ),
        (
            "projected token",
            "{name: v, projected: {sources: [{serviceAccountToken: {path: token}}]}}",
            "projected",
            true,
            true,
            true,
            none,
            api_only,
        ),
        (
            "projected configMap and secret",
            "{name: v, projected: {sources: [{configMap: {name: c}}, {secret: {name: s}}]}}",
            "projected",
            true,
            true,
            true,
            none,
            api_only,
        ),
        (
            "projected clusterTrustBundle",
            "{name: v, projected: {sources: [{downwardAPI: {}}, {clusterTrustBundle: {path: b}}]}}",
            "projected",
            true,
            true,
            false,
            unsupported_projection,
            unsupported_projection,
        ),
        (
            "persistentVolumeClaim",
            "{name: v, persistentVolumeClaim: {claimName: c}}",
            "unsupported",
            false,
            false,
            false,
            unsupported_type,
            unsupported_type,
        ),
        (
            "no source",
            "{name: v}",
            "unsupported",
            false,
            false,
            false,
            unsupported_type,
            unsupported_type,
        ),
        (
            "two sources: the first in the table's order",
            "{name: v, secret: {secretName: s}, emptyDir: {}}",
            "emptyDir",
            false,
            false,
            false,
            none,
            none,
        ),
    ];
    for (case, volume, kind, remount, read_only, api, refused_api, refused_static) in table {
        let want = Answers {
            kind,
            requires_remount: remount,
            read_only,
            needs_api_objects: api,
            refused_for_api_pod: refused_api,
            refused_for_static_pod: refused_static,
        };
        assert_eq!(answers(volume), want, "{case}");
    }
}

#[test]
fn each_projection_derives_its_kind() {
    let table = [
        (
            "serviceAccountToken",
            "{serviceAccountToken: {path: t}}",
            true,
            true,
        ),
        ("configMap", "{configMap: {name: c}}", true, true),
        ("secret", "{secret: {name: s}}", true, true),
        ("downwardAPI", "{downwardAPI: {items: []}}", true, false),
        (
            "clusterTrustBundle",
            "{clusterTrustBundle: {path: b}}",
            false,
            false,
        ),
        (
            "podCertificate",
            "{podCertificate: {signerName: x, keyType: ED25519, credentialBundlePath: c}}",
            false,
            false,
        ),
        ("none", "{}", false, false),
    ];
    for (case, projection, supported, api) in table {
        let projection: VolumeProjection = wasmlet_plugin_host::yaml::from_str(projection)
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        let kind = ProjectionKind::of(&projection);
        assert_eq!(kind.supported(), supported, "{case}");
        assert_eq!(kind.needs_api_objects(), api, "{case}");
    }
}
