//! The cell's public key infrastructure and the rustls/quinn configurations built on it.
//!
//! - `gantry-master init` creates a cluster CA (ECDSA P-256) and a master certificate
//!   with the names `gantry-master` and the master's host name.
//! - An execd joins with a token that carries the SHA-256 fingerprint of the CA: on that
//!   first connection it trusts the master only if the chain it presents ends in the CA
//!   with that fingerprint. It sends a fresh public key; the master returns a host
//!   certificate signed by the CA.
//! - From then on both sides authenticate each other (mutual TLS): the execd verifies
//!   the master against the CA, the master verifies the host certificate against the CA
//!   and looks up which host it was issued to.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData, SubjectPublicKeyInfo,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

/// The TLS server name every execd uses for the master, whatever address it dials: the
/// master's certificate always carries it, and trust comes from the CA, not from DNS.
pub const MASTER_SERVER_NAME: &str = "gantry-master";

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration failed: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("no certificate found in PEM data")]
    NoCertificate,
    #[error("no private key found in PEM data")]
    NoKey,
    #[error("malformed PEM data: {0}")]
    Pem(String),
    #[error("QUIC TLS configuration failed: {0}")]
    Quic(String),
    #[error("client certificate verifier: {0}")]
    Verifier(String),
}

pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// SHA-256 of a DER certificate.
pub fn fingerprint(der: &[u8]) -> [u8; 32] {
    Sha256::digest(der).into()
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
}

/// A newly created cluster CA: certificate and key, PEM.
pub struct NewCa {
    pub cert_pem: String,
    pub key_pem: String,
    pub cert_der: Vec<u8>,
}

pub fn generate_ca(cell_name: &str) -> Result<NewCa, TlsError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Gantry");
    dn.push(DnType::CommonName, format!("Gantry cell CA ({cell_name})"));
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut params, 20 * 365);
    let cert = params.self_signed(&key)?;
    Ok(NewCa {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        cert_der: cert.der().to_vec(),
    })
}

/// The CA, loaded to sign certificates.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pub cert_pem: String,
}

impl Ca {
    pub(crate) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }

    pub fn load(cert_pem: &str, key_pem: &str) -> Result<Ca, TlsError> {
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Ca {
            issuer,
            cert_pem: cert_pem.to_string(),
        })
    }

    /// The master's certificate and key (PEM) for `hostname`.
    pub fn issue_master(&self, hostname: &str) -> Result<(String, String), TlsError> {
        let key = KeyPair::generate()?;
        let mut names = vec![MASTER_SERVER_NAME.to_string()];
        if hostname != MASTER_SERVER_NAME {
            names.push(hostname.to_string());
        }
        let mut params = CertificateParams::new(names)?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("gantry-master {hostname}"));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        validity(&mut params, 10 * 365);
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A host certificate for `hostname` over the public key an execd sent (DER
    /// SubjectPublicKeyInfo).
    pub fn issue_host(&self, hostname: &str, public_key_der: &[u8]) -> Result<String, TlsError> {
        let public = SubjectPublicKeyInfo::from_der(public_key_der)?;
        let mut params = CertificateParams::new(vec![hostname.to_string()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("gantry-execd {hostname}"));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        validity(&mut params, 10 * 365);
        Ok(params.signed_by(&public, &self.issuer)?.pem())
    }
}

/// A fresh key pair for an execd: (private key PEM, public key DER to send to the master).
pub fn generate_host_key() -> Result<(String, Vec<u8>), TlsError> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.subject_public_key_info()))
}

/// The DER certificates in a PEM file, in order.
pub fn certs_from_pem(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    Ok(certs)
}

/// The private key in a PEM file.
pub fn key_from_pem(pem: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::NoKey,
        other => TlsError::Pem(other.to_string()),
    })
}

fn alpn_list(version: u32) -> Vec<Vec<u8>> {
    vec![
        gantry_proto::alpn_for(version),
        gantry_proto::ALPN_VERSION_PROBE.to_vec(),
    ]
}

/// QUIC transport settings both daemons use: keep-alives every second (so that NATs and
/// firewalls keep state, and an execd learns within a second from a restarted master's
/// stateless reset that its connection is gone), and a connection is declared dead
/// after 15 s of silence.
/// No peer may open a unidirectional stream: Gantry uses none, and each could hold a
/// stream's window of the receiver's memory unread.
pub fn transport_config() -> Arc<quinn::TransportConfig> {
    Arc::new(base_transport())
}

fn base_transport() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.keep_alive_interval(Some(Duration::from_secs(1)));
    if let Ok(idle) = quinn::IdleTimeout::try_from(Duration::from_secs(15)) {
        t.max_idle_timeout(Some(idle));
    }
    t.max_concurrent_bidi_streams(SESSION_STREAMS.into());
    t.max_concurrent_uni_streams(0u32.into());
    t
}

/// Streams a registered execd may have open at once (its control stream and the client
/// requests it relays).
pub const SESSION_STREAMS: u32 = 256;

/// What a registered execd may have sent the master unread, over all its streams.
pub const SESSION_RECEIVE_WINDOW: u32 = 32 * 1024 * 1024;

/// What a peer the master does not know yet (no certificate checked, no registration)
/// may send unread: its hello and its join or registration fit many times over.
pub const PRE_SESSION_RECEIVE_WINDOW: u32 = 256 * 1024;

/// The master's side: until a connection has registered (or joined), its peer may open
/// one stream and have [`PRE_SESSION_RECEIVE_WINDOW`] bytes unread; the session then
/// raises both ([`open_session_limits`]).
fn master_transport_config() -> Arc<quinn::TransportConfig> {
    let mut t = base_transport();
    t.max_concurrent_bidi_streams(1u32.into());
    t.receive_window(PRE_SESSION_RECEIVE_WINDOW.into());
    // Per stream (fixed for the connection's life); the connection's window, raised
    // with the session, bounds what all of them hold together.
    t.stream_receive_window((1024u32 * 1024).into());
    Arc::new(t)
}

/// Give a registered execd's connection the room of a session.
pub fn open_session_limits(conn: &quinn::Connection) {
    conn.set_max_concurrent_bi_streams(SESSION_STREAMS.into());
    conn.set_receive_window(SESSION_RECEIVE_WINDOW.into());
}

/// Random 8-byte connection ids, any of which the endpoint takes as possibly its own.
/// quinn's default signs ids with a key chosen afresh by every run and drops the packets
/// of a previous run's connections unanswered; with these, a restarted master answers
/// them with a stateless reset.
struct RandomConnectionIds;

impl quinn::ConnectionIdGenerator for RandomConnectionIds {
    fn generate_cid(&mut self) -> quinn::ConnectionId {
        quinn::ConnectionId::new(&rand::random::<[u8; 8]>())
    }

    fn cid_len(&self) -> usize {
        8
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The master's endpoint configuration: its stateless-reset key is derived from the
/// master's private key and its connection ids are not tied to one run, so that a
/// restarted master tells execds at once that their old connection is gone (instead of
/// them waiting for the idle timeout).
pub fn master_endpoint_config(master_key_pem: &str) -> quinn::EndpointConfig {
    let mut h = Sha256::new();
    h.update(b"gantry stateless reset key\0");
    h.update(master_key_pem.as_bytes());
    let seed: [u8; 32] = h.finalize().into();
    let mut config = quinn::EndpointConfig::new(Arc::new(ring::hmac::Key::new(
        ring::hmac::HMAC_SHA256,
        &seed,
    )));
    config.cid_generator(|| Box::new(RandomConnectionIds));
    config
}

/// What a QUIC endpoint's UDP socket holds unread and unsent (either way).
///
/// Linux's default (212 KiB) overflows under one session's stream: `qrsh cat` of
/// 256 MiB on loopback lost about a thousand datagrams to `UdpRcvbufErrors`, and each
/// loss halves the sender's congestion window. quinn does not size the socket itself.
pub const UDP_BUFFER: usize = 8 * 1024 * 1024;

/// A UDP socket bound to `addr` for a QUIC endpoint, with [`UDP_BUFFER`] bytes each
/// way: forced past `net.core.rmem_max`/`wmem_max` where the process may (root, as the
/// daemons run), else as much as those allow.
pub fn bind_udp(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use nix::sys::socket::{setsockopt, sockopt};
    let udp = std::net::UdpSocket::bind(addr)?;
    if setsockopt(&udp, sockopt::RcvBufForce, &UDP_BUFFER).is_err() {
        let _ = setsockopt(&udp, sockopt::RcvBuf, &UDP_BUFFER);
    }
    if setsockopt(&udp, sockopt::SndBufForce, &UDP_BUFFER).is_err() {
        let _ = setsockopt(&udp, sockopt::SndBuf, &UDP_BUFFER);
    }
    Ok(udp)
}

/// A client-only QUIC endpoint (an execd's) on a [`bind_udp`] socket.
pub fn client_endpoint(bind: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        bind_udp(bind)?,
        Arc::new(quinn::TokioRuntime),
    )
}

/// A server configuration of the master presenting `[master, CA]`, verifying a client
/// certificate under the CA and accepting a client without one; TLS 1.3 only, or
/// rustls' safe defaults.
fn master_tls(
    ca_pem: &str,
    master_cert_pem: &str,
    master_key_pem: &str,
    tls13_only: bool,
) -> Result<rustls::ServerConfig, TlsError> {
    let provider = provider();
    let ca = certs_from_pem(ca_pem)?;
    let mut roots = RootCertStore::empty();
    for c in &ca {
        roots.add(c.clone())?;
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| TlsError::Verifier(e.to_string()))?;
    let mut chain = certs_from_pem(master_cert_pem)?;
    chain.extend(ca);
    let builder = rustls::ServerConfig::builder_with_provider(provider);
    let builder = if tls13_only {
        builder.with_protocol_versions(&[&rustls::version::TLS13])?
    } else {
        builder.with_safe_default_protocol_versions()?
    };
    Ok(builder
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key_from_pem(master_key_pem)?)?)
}

/// The master's QUIC server configuration: presents `[master, CA]`, accepts clients with
/// a certificate under the CA, and clients without one (who may only join).
pub fn master_server_config(
    ca_pem: &str,
    master_cert_pem: &str,
    master_key_pem: &str,
    protocol_version: u32,
) -> Result<quinn::ServerConfig, TlsError> {
    let mut tls = master_tls(ca_pem, master_cert_pem, master_key_pem, true)?;
    tls.alpn_protocols = alpn_list(protocol_version);
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| TlsError::Quic(e.to_string()))?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(quic));
    cfg.transport_config(master_transport_config());
    Ok(cfg)
}

/// The master's HTTPS configuration: presents `[master, CA]`, asks for a client
/// certificate under the CA (a user's, see [`crate::usercert`]) and accepts a client
/// without one (who may read only what the administrator opened to everyone).
pub fn https_server_config(
    ca_pem: &str,
    master_cert_pem: &str,
    master_key_pem: &str,
) -> Result<rustls::ServerConfig, TlsError> {
    let mut tls = master_tls(ca_pem, master_cert_pem, master_key_pem, false)?;
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tls)
}

/// An execd's configuration for its first connection: no client certificate, and the
/// master trusted only if its chain includes the CA with the token's fingerprint.
pub fn join_client_config(
    ca_fingerprint: [u8; 32],
    protocol_version: u32,
) -> Result<quinn::ClientConfig, TlsError> {
    let provider = provider();
    let verifier = Arc::new(PinnedCaVerifier {
        fingerprint: ca_fingerprint,
        provider: provider.clone(),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = alpn_list(protocol_version);
    client_from_tls(tls)
}

/// An execd's configuration once it has a host certificate: mutual TLS under the CA.
pub fn host_client_config(
    ca_pem: &str,
    host_cert_pem: &str,
    host_key_pem: &str,
    protocol_version: u32,
) -> Result<quinn::ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    for c in certs_from_pem(ca_pem)? {
        roots.add(c)?;
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs_from_pem(host_cert_pem)?, key_from_pem(host_key_pem)?)?;
    tls.alpn_protocols = alpn_list(protocol_version);
    client_from_tls(tls)
}

fn client_from_tls(tls: rustls::ClientConfig) -> Result<quinn::ClientConfig, TlsError> {
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| TlsError::Quic(e.to_string()))?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(quic));
    cfg.transport_config(transport_config());
    Ok(cfg)
}

/// Trusts a server whose chain contains the CA with a given fingerprint, and whose
/// end-entity certificate that CA signed for the requested name.
#[derive(Debug)]
struct PinnedCaVerifier {
    fingerprint: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCaVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(ca) = intermediates
            .iter()
            .find(|c| fingerprint(c.as_ref()) == self.fingerprint)
        else {
            return Err(rustls::Error::General(
                "the master's CA does not match the fingerprint in the join token".to_string(),
            ));
        };
        let mut roots = RootCertStore::empty();
        roots.add(ca.clone().into_owned())?;
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            self.provider.clone(),
        )
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))?;
        inner.verify_server_cert(end_entity, &[], server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_issues_master_and_host_certificates_that_parse() {
        let ca = generate_ca("test").unwrap();
        let loaded = Ca::load(&ca.cert_pem, &ca.key_pem).unwrap();
        let (mcert, mkey) = loaded.issue_master("head").unwrap();
        assert_eq!(certs_from_pem(&mcert).unwrap().len(), 1);
        key_from_pem(&mkey).unwrap();
        let (_hkey, public) = generate_host_key().unwrap();
        let hcert = loaded.issue_host("node1", &public).unwrap();
        assert_eq!(certs_from_pem(&hcert).unwrap().len(), 1);
        assert_eq!(
            fingerprint(certs_from_pem(&ca.cert_pem).unwrap()[0].as_ref()),
            fingerprint(&ca.cert_der)
        );
        assert!(loaded.issue_host("node1", b"not a key").is_err());
    }

    #[test]
    fn pem_without_certificates_is_an_error() {
        assert!(matches!(
            certs_from_pem("junk"),
            Err(TlsError::NoCertificate)
        ));
        assert!(matches!(key_from_pem("junk"), Err(TlsError::NoKey)));
    }

    #[test]
    fn endpoint_sockets_hold_more_than_the_kernel_default() {
        use nix::sys::socket::{getsockopt, sockopt};
        let udp = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
        let (rcv, snd) = (
            getsockopt(&udp, sockopt::RcvBuf).unwrap(),
            getsockopt(&udp, sockopt::SndBuf).unwrap(),
        );
        if nix::unistd::geteuid().is_root() {
            // Linux reports twice what was set (its bookkeeping share).
            assert!(rcv >= UDP_BUFFER && snd >= UDP_BUFFER, "{rcv} {snd}");
        } else {
            let max =
                |f: &str| -> usize { std::fs::read_to_string(f).unwrap().trim().parse().unwrap() };
            let (rmax, wmax) = (
                max("/proc/sys/net/core/rmem_max"),
                max("/proc/sys/net/core/wmem_max"),
            );
            eprintln!("not root: the buffers are capped by rmem_max/wmem_max");
            assert!(rcv >= rmax.min(UDP_BUFFER), "{rcv} < {rmax}");
            assert!(snd >= wmax.min(UDP_BUFFER), "{snd} < {wmax}");
        }
    }
}
