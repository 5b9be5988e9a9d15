//! The verifiers against real certificates that openssl(1) makes in a temp
//! dir: a test CA and a leaf for `localhost` it signs, as
//! scripts/pg-test-server.sh makes them for the store's TLS tests.

use std::path::Path;
use std::process::Command;

use rustls::pki_types::pem::PemObject;
use rustls::RootCertStore;

use super::*;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl(1) is installed");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openssl {args:?}: {err}");
}

/// A fresh CA named `ca_name` and a leaf for `localhost` it signed.
fn ca_and_leaf(ca_name: &str) -> (CertificateDer<'static>, CertificateDer<'static>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &key,
        &["-days", "2", "-subj", &format!("/CN={ca_name}")],
    ];
    openssl(
        d,
        &[&ca.concat()[..], &["-keyout", "ca.key", "-out", "ca.pem"]].concat(),
    );
    let csr = [
        &["req"][..],
        &key,
        &["-subj", "/CN=localhost", "-keyout", "leaf.key"],
    ];
    openssl(d, &[&csr.concat()[..], &["-out", "leaf.csr"]].concat());
    std::fs::write(
        d.join("leaf.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "leaf.ext",
            "-out",
            "leaf.pem",
        ],
    );
    let der = |f: &str| CertificateDer::from_pem_file(d.join(f)).unwrap();
    (der("ca.pem"), der("leaf.pem"))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn webpki_trusting(ca: CertificateDer<'static>) -> Arc<WebPkiServerVerifier> {
    let mut roots = RootCertStore::empty();
    roots.add(ca).unwrap();
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .unwrap()
}

fn name(s: &str) -> ServerName<'static> {
    ServerName::try_from(s.to_owned()).unwrap()
}

fn verify(
    v: &dyn ServerCertVerifier,
    leaf: &CertificateDer<'_>,
    host: &str,
) -> Result<ServerCertVerified, Error> {
    v.verify_server_cert(leaf, &[], &name(host), &[], UnixTime::now())
}

#[test]
fn accept_any_takes_any_certificate_for_any_name() {
    let v = AcceptAnyCertificate::new(provider());
    let garbage = CertificateDer::from(vec![0x30, 0x03, 1, 2, 3]);
    assert!(verify(&*v, &garbage, "example.com").is_ok());
    let (_, leaf) = ca_and_leaf("kurabe-tls-test-ca");
    assert!(verify(&*v, &leaf, "elsewhere.example").is_ok());
    // It still offers (and so checks) real signature schemes.
    let schemes = v.supported_verify_schemes();
    assert!(
        schemes.contains(&SignatureScheme::ECDSA_NISTP256_SHA256),
        "{schemes:?}"
    );
}

#[test]
fn chain_only_accepts_a_wrong_name_but_not_a_wrong_chain() {
    let (ca, leaf) = ca_and_leaf("kurabe-tls-test-ca");
    let webpki = webpki_trusting(ca);
    let v = ChainOnly::new(webpki.clone());
    assert!(verify(&*v, &leaf, "localhost").is_ok());
    // Full verification refuses the name; ChainOnly lets it through.
    let full = verify(&*webpki, &leaf, "elsewhere.example").unwrap_err();
    assert!(
        matches!(
            full,
            Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            )
        ),
        "{full:?}"
    );
    assert!(verify(&*v, &leaf, "elsewhere.example").is_ok());
    // A leaf from another CA is refused whatever the name.
    let (_, stranger) = ca_and_leaf("another-ca");
    let err = verify(&*v, &stranger, "localhost").unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidCertificate(CertificateError::UnknownIssuer)
        ),
        "{err:?}"
    );
}
