//! The CA certificates a TLS connection trusts. The desktop build carries
//! webpki-roots' public CAs (feature `webpki-roots`); without that feature
//! (the edge build, where the compiled-in list costs about 60 KiB) they come from
//! the host's CA bundle at run time: `SSL_CERT_FILE`, else the first of
//! [`SYSTEM_BUNDLES`] that exists. A server's `caFile` adds to either.

use std::path::Path;

use rustls::RootCertStore;

use super::error::TlsError;
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
pub fn for_server(ca_file: Option<&Path>) -> Result<RootCertStore, TlsError> {
    let mut roots = public(ca_file.is_some())?;
    if let Some(path) = ca_file {
        // A file the user wrote: any certificate refused is an error.
        let (added, refused) = add_pem(&mut roots, path, "caFile")?;
        if let Some(refused) = refused {
            return Err(refused);
        }
        if added == 0 {
            return Err(TlsError::NoCertificate(path.to_path_buf()));
        }
    }
    Ok(roots)
}

#[cfg(feature = "webpki-roots")]
fn public(_have_ca_file: bool) -> Result<RootCertStore, TlsError> {
    Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
}

/// The host's bundle; with none on the host, a `caFile` alone will do (a
/// private CA), else the error names where it was looked for.
#[cfg(not(feature = "webpki-roots"))]
fn public(have_ca_file: bool) -> Result<RootCertStore, TlsError> {
    let env = std::env::var_os("SSL_CERT_FILE");
    match system_bundle(env.as_deref().map(Path::new), SYSTEM_BUNDLES)? {
        Some(roots) => Ok(roots),
        None if have_ca_file => Ok(RootCertStore::empty()),
        None => Err(TlsError::NoBundle(SYSTEM_BUNDLES)),
    }
}

/// The CAs of `env_file` (`SSL_CERT_FILE`: it must be usable), else of the
/// first of `candidates` that exists; `None` when there is none.
#[cfg(any(test, not(feature = "webpki-roots")))]
pub fn system_bundle(env_file: Option<&Path>, candidates: &[&str]) -> Result<Option<RootCertStore>, TlsError> {
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
        return Err(TlsError::NoUsable { what, path: path.to_path_buf() });
    }
    Ok(Some(roots))
}

/// Adds the certificates of the PEM file `path` that webpki accepts to
/// `roots`; returns how many, and why the first refused one was refused.
/// `what` names the file's origin in errors.
fn add_pem(roots: &mut RootCertStore, path: &Path, what: &'static str) -> Result<(usize, Option<TlsError>), TlsError> {
    let pem = crate::host::small_file::read(path).map_err(|err| TlsError::Read { what, path: path.to_path_buf(), err })?;
    let (mut added, mut refused) = (0, None);
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| TlsError::NotPem { what, path: path.to_path_buf(), why: e.to_string() })?;
        match roots.add(cert) {
            Ok(()) => added += 1,
            Err(e) => refused = refused.or(Some(TlsError::Refused { what, path: path.to_path_buf(), why: e.to_string() })),
        }
    }
    Ok((added, refused))
}
