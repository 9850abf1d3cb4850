//! The CA certificates a TLS connection trusts. The desktop build carries
//! webpki-roots' public CAs (feature `webpki-roots`); without that feature
//! (the edge build, where the compiled-in list costs about 60 KiB) they come from
//! the host's CA bundle at run time: `SSL_CERT_FILE`, else the first of
//! [`SYSTEM_BUNDLES`] that exists. A server's `caFile` adds to either.

use std::path::Path;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// Where distributions keep their PEM bundle of trusted CAs, in the order tried.
#[cfg(any(test, not(feature = "webpki-roots")))]
pub const SYSTEM_BUNDLES: &[&str] = &[
    // Debian, Ubuntu, Alpine, Arch, Gentoo; OpenWrt's `ca-bundle` package.
    "/etc/ssl/certs/ca-certificates.crt",
    // Fedora, RHEL, CentOS.
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    // openSUSE.
    "/etc/ssl/ca-bundle.pem",
    // Alpine, the BSDs.
    "/etc/ssl/cert.pem",
];

/// The roots for one server: the public CAs, plus the certificates of its
/// `caFile` when given.
pub fn for_server(ca_file: Option<&Path>) -> Result<RootCertStore, String> {
    let mut roots = public(ca_file.is_some())?;
    if let Some(path) = ca_file {
        // A file the user wrote: any certificate refused is an error.
        let (added, refused) = add_pem(&mut roots, path, "caFile")?;
        if let Some(refused) = refused {
            return Err(refused);
        }
        if added == 0 {
            return Err(format!("caFile {}: no \"BEGIN CERTIFICATE\" block found", path.display()));
        }
    }
    Ok(roots)
}

#[cfg(feature = "webpki-roots")]
fn public(_have_ca_file: bool) -> Result<RootCertStore, String> {
    Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
}

/// The host's bundle; with none on the host, a `caFile` alone will do (a
/// private CA), else the error names where it was looked for.
#[cfg(not(feature = "webpki-roots"))]
fn public(have_ca_file: bool) -> Result<RootCertStore, String> {
    let env = std::env::var_os("SSL_CERT_FILE");
    match system_bundle(env.as_deref().map(Path::new), SYSTEM_BUNDLES)? {
        Some(roots) => Ok(roots),
        None if have_ca_file => Ok(RootCertStore::empty()),
        None => Err(no_bundle(SYSTEM_BUNDLES)),
    }
}

/// The CAs of `env_file` (`SSL_CERT_FILE`: it must be usable), else of the
/// first of `candidates` that exists; `None` when there is none.
#[cfg(any(test, not(feature = "webpki-roots")))]
pub fn system_bundle(env_file: Option<&Path>, candidates: &[&str]) -> Result<Option<RootCertStore>, String> {
    let (path, what) = match env_file {
        Some(path) => (path, "SSL_CERT_FILE"),
        None => match candidates.iter().map(Path::new).find(|p| p.is_file()) {
            Some(path) => (path, "CA bundle"),
            None => return Ok(None),
        },
    };
    let mut roots = RootCertStore::empty();
    // A distribution bundle may hold a certificate webpki cannot use: skipped.
    if add_pem(&mut roots, path, what)?.0 == 0 {
        return Err(format!("{what} {}: no usable CA certificate in it", path.display()));
    }
    Ok(Some(roots))
}

/// The error when the host has no CA bundle.
#[cfg(any(test, not(feature = "webpki-roots")))]
pub fn no_bundle(candidates: &[&str]) -> String {
    format!(
        "no CA certificates to check the server's certificate with: this build reads them from the host; \
         set SSL_CERT_FILE, or install a CA bundle at one of {} (OpenWrt: the `ca-bundle` package), \
         or name the server's CA in \"caFile\"",
        candidates.join(", ")
    )
}

/// Adds the certificates of the PEM file `path` that webpki accepts to
/// `roots`; returns how many, and why the first refused one was refused.
/// `what` names the file's origin in errors.
fn add_pem(roots: &mut RootCertStore, path: &Path, what: &str) -> Result<(usize, Option<String>), String> {
    let shown = path.display();
    let pem = std::fs::read(path).map_err(|e| format!("{what} {shown}: cannot read it: {e}"))?;
    let (mut added, mut refused) = (0, None);
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("{what} {shown}: not a valid PEM certificate file: {e}"))?;
        match roots.add(cert) {
            Ok(()) => added += 1,
            Err(e) => refused = refused.or(Some(format!("{what} {shown}: certificate refused: {e}"))),
        }
    }
    Ok((added, refused))
}
