use super::*;

fn client_cert(cn: &str, orgs: &[&str]) -> CertificateDer<'static> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    for org in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *org);
    }
    params.self_signed(&key).unwrap().der().clone()
}

#[test]
fn the_self_signed_certificate_is_made_once_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    let ip: IpAddr = "10.1.2.3".parse().unwrap();
    let first = self_signed(&pki, "node-a", &[ip]).unwrap();
    assert_eq!(first.cert_file, pki.join("kubelet.crt"));
    let mode = std::fs::metadata(&first.key_file).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );
    let (_, cert) = x509_parser::parse_x509_certificate(&first.chain[0]).unwrap();
    use x509_parser::extensions::GeneralName;
    let sans = &cert
        .subject_alternative_name()
        .unwrap()
        .unwrap()
        .value
        .general_names;
    assert!(
        sans.iter()
            .any(|n| matches!(n, GeneralName::DNSName("node-a"))),
        "{sans:?}"
    );
    assert!(
        sans.iter()
            .any(|n| matches!(n, GeneralName::IPAddress([10, 1, 2, 3]))),
        "{sans:?}"
    );
    assert!(cert.validity().is_valid());

    let second = self_signed(&pki, "node-a", &[ip]).unwrap();
    assert_eq!(first.chain, second.chain, "reused across restarts");
    server_config(second, None).unwrap();

    // A broken pair is replaced, not fatal.
    std::fs::write(&first.key_file, "not a key").unwrap();
    let third = self_signed(&pki, "node-a", &[ip]).unwrap();
    assert_ne!(first.chain, third.chain);
    server_config(third, None).unwrap();
}

#[test]
fn configured_files_are_used_and_errors_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let made = self_signed(dir.path(), "node-a", &[]).unwrap();
    let kubelet = KubeletConfiguration {
        tls_cert_file: Some(made.cert_file.display().to_string()),
        tls_private_key_file: Some(made.key_file.display().to_string()),
        ..Default::default()
    };
    let loaded = serving_certificate(&kubelet, &dir.path().join("unused"), "x", &[]).unwrap();
    assert_eq!(loaded.chain, made.chain);
    assert!(!dir.path().join("unused").exists());

    let missing = KubeletConfiguration {
        tls_cert_file: Some("/nonexistent/k.crt".into()),
        tls_private_key_file: Some("/nonexistent/k.key".into()),
        ..Default::default()
    };
    let text = serving_certificate(&missing, dir.path(), "x", &[])
        .err()
        .unwrap()
        .to_string();
    assert!(text.starts_with("tlsCertFile /nonexistent/k.crt"), "{text}");

    let empty_ca = dir.path().join("ca.crt");
    std::fs::write(&empty_ca, "").unwrap();
    let text = server_config(
        self_signed(dir.path(), "node-a", &[]).unwrap(),
        Some(&empty_ca),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        text.contains("authentication.x509.clientCAFile") && text.contains("no PEM certificate"),
        "{text}"
    );
    let ca = self_signed(&dir.path().join("ca"), "ca", &[]).unwrap();
    server_config(
        self_signed(dir.path(), "node-a", &[]).unwrap(),
        Some(&ca.cert_file),
    )
    .unwrap();
}

#[test]
fn a_client_certificate_names_user_and_groups() {
    // (rcgen keeps one value per attribute type, so one O here; every O is a group.)
    let user = client_user(&client_cert("admin", &["system:masters"])).unwrap();
    assert_eq!(user.name, "admin");
    assert_eq!(user.groups, ["system:masters"]);
    assert!(client_user(&client_cert("node", &[]))
        .unwrap()
        .groups
        .is_empty());
    assert_eq!(
        client_user(&client_cert("", &["x"])),
        None,
        "no CN, no user"
    );
    assert_eq!(client_user(&CertificateDer::from(vec![1, 2, 3])), None);
}
