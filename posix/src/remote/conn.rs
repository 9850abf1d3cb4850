//! Byte streams to a remote server: TCP, or TLS over TCP with the `tls`
//! feature. Name resolution runs on the blocking pool (std's resolver).

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_io::{Async, Timer};
use smol::future::FutureExt as _;
use smol::io::{AsyncRead, AsyncWrite};

use super::url::{Scheme, Url};

/// One connection to the server.
pub enum Stream {
    Plain(Async<TcpStream>),
    #[cfg(feature = "tls")]
    Tls(Box<futures_rustls::client::TlsStream<Async<TcpStream>>>),
}

/// What it takes to open connections to one server.
#[derive(Clone)]
pub struct Connector {
    pub connect_timeout: Duration,
    #[cfg(feature = "tls")]
    pub tls: Option<futures_rustls::TlsConnector>,
    /// The configured `caFile`, for the error of a refused certificate.
    #[cfg(feature = "tls")]
    pub ca_file: Option<std::path::PathBuf>,
}

/// `fut`, or a `TimedOut` error after `d` naming `what`.
pub async fn timeout<T>(d: Duration, what: &str, fut: impl std::future::Future<Output = io::Result<T>>) -> io::Result<T> {
    let what = what.to_string();
    fut.or(async move {
        Timer::after(d).await;
        Err(io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out after {}", crate::log::line::show_duration(d))))
    })
    .await
}

impl Connector {
    /// Resolves the host, connects to its addresses in order and, for https,
    /// runs the TLS handshake (with SNI), all within `connect_timeout`.
    pub async fn connect(&self, url: &Url) -> io::Result<Stream> {
        let host = url.host.clone();
        let port = url.port;
        timeout(self.connect_timeout, &format!("connecting to {}", url.host_header()), async {
            let addrs: Vec<SocketAddr> = smol::unblock(move || (host.as_str(), port).to_socket_addrs().map(|a| a.collect()))
                .await
                .map_err(|e| io::Error::new(e.kind(), format!("cannot resolve {}: {e}", url.host)))?;
            let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{} has no addresses", url.host));
            for addr in addrs {
                match Async::<TcpStream>::connect(addr).await {
                    Ok(s) => {
                        let _ = s.get_ref().set_nodelay(true);
                        return self.wrap(url, s).await;
                    }
                    Err(e) => last = io::Error::new(e.kind(), format!("cannot connect to {addr}: {e}")),
                }
            }
            Err(last)
        })
        .await
    }

    async fn wrap(&self, url: &Url, tcp: Async<TcpStream>) -> io::Result<Stream> {
        match url.scheme {
            Scheme::Http => Ok(Stream::Plain(tcp)),
            #[cfg(feature = "tls")]
            Scheme::Https => {
                let tls = self.tls.as_ref().ok_or_else(|| io::Error::other("TLS is not configured for this server"))?;
                let name = rustls_pki_types::ServerName::try_from(url.host.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("bad TLS server name {}: {e}", url.host)))?;
                let s = tls
                    .connect(name, tcp)
                    .await
                    .map_err(|e| {
                        let hint = match &self.ca_file {
                            _ if !e.to_string().contains("UnknownIssuer") => String::new(),
                            Some(ca) => format!(" (no certificate in caFile {} issued it)", ca.display()),
                            None => " (a private CA? name its certificate in \"caFile\")".to_string(),
                        };
                        io::Error::new(e.kind(), format!("TLS handshake with {} failed: {e}{hint}", url.host_header()))
                    })?;
                Ok(Stream::Tls(Box::new(s)))
            }
            #[cfg(not(feature = "tls"))]
            Scheme::Https => Err(io::Error::other("this mcpx was built without TLS (feature `tls`)")),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_close(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(&mut **s).poll_close(cx),
        }
    }
}

/// The rustls client configuration for one server: the public CAs (see
/// `roots`), plus the certificates of `ca_file` (PEM) when given.
#[cfg(feature = "tls")]
pub fn tls_connector(ca_file: Option<&std::path::Path>) -> Result<futures_rustls::TlsConnector, super::error::TlsError> {
    connector_for(super::roots::for_server(ca_file)?)
}

/// The rustls client configuration that trusts `roots`.
#[cfg(feature = "tls")]
pub fn connector_for(roots: rustls::RootCertStore) -> Result<futures_rustls::TlsConnector, super::error::TlsError> {
    use std::sync::Arc;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| super::error::TlsError::Setup(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(futures_rustls::TlsConnector::from(Arc::new(config)))
}
