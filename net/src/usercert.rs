//! Users' certificates for the master's HTTP listener: issued by the cell's CA for one
//! user (`gantry-master user-cert USER`), valid for a set time, recorded in the cell's
//! `user-certs` file by serial number, and revocable there. A certificate is a user's
//! only if its subject says so ([`USER_UNIT`]): an execd's host certificate, signed by
//! the same CA, names no user.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::tls::{Ca, TlsError};

/// The organizational unit of every user certificate's subject.
pub const USER_UNIT: &str = "gantry user";

/// A certificate issued for a user, with its key.
#[derive(Debug, Clone)]
pub struct UserCert {
    pub cert_pem: String,
    pub key_pem: String,
    /// Lower-case hex, as the `user-certs` file records it.
    pub serial: String,
    /// Seconds since the epoch.
    pub not_after: i64,
}

impl Ca {
    /// A client certificate for `user`, valid for `days` days from now.
    pub fn issue_user(&self, user: &str, days: i64) -> Result<UserCert, TlsError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        params
            .distinguished_name
            .push(DnType::OrganizationalUnitName, USER_UNIT);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let mut serial: [u8; 16] = rand::random();
        // Positive and of full length.
        serial[0] = (serial[0] & 0x7f) | 0x40;
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + time::Duration::days(days);
        let cert = params.signed_by(&key, self.issuer())?;
        Ok(UserCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            serial: hex::encode(serial),
            not_after: params.not_after.unix_timestamp(),
        })
    }
}

/// Who a certificate the CA signed was issued to, if to a user: (user, serial in
/// lower-case hex). None for a host's certificate or one that does not parse.
pub fn user_of_certificate(der: &[u8]) -> Option<(String, String)> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let unit = subject
        .iter_organizational_unit()
        .next()
        .and_then(|a| a.as_str().ok())?;
    if unit != USER_UNIT {
        return None;
    }
    let user = subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())?;
    Some((user.to_string(), hex::encode(cert.raw_serial())))
}

/// One line of the `user-certs` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCert {
    pub serial: String,
    pub user: String,
    pub not_after: i64,
    pub revoked: bool,
}

/// The cell's record of issued user certificates: `SERIAL USER NOT_AFTER valid|revoked`
/// per line.
pub fn read_issued(path: &Path) -> std::io::Result<Vec<IssuedCert>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [serial, user, not_after, state] => Some(IssuedCert {
                    serial: serial.to_string(),
                    user: user.to_string(),
                    not_after: not_after.parse().ok()?,
                    revoked: *state == "revoked",
                }),
                _ => None,
            }
        })
        .collect())
}

/// Write the record (atomically, readable by its owner only).
pub fn write_issued(path: &Path, certs: &[IssuedCert]) -> std::io::Result<()> {
    let text: String = certs
        .iter()
        .map(|c| {
            format!(
                "{} {} {} {}\n",
                c.serial,
                c.user,
                c.not_after,
                if c.revoked { "revoked" } else { "valid" }
            )
        })
        .collect();
    crate::cell::write_file_atomic(path, text.as_bytes(), 0o600)
}

/// The record as the master reads it when a certificate is presented: read again
/// when the file changed, so that a revocation takes effect at the next connection.
pub struct IssuedCerts {
    path: PathBuf,
    cache: Mutex<(Option<SystemTime>, HashMap<String, IssuedCert>)>,
}

impl IssuedCerts {
    pub fn new(path: PathBuf) -> IssuedCerts {
        IssuedCerts {
            path,
            cache: Mutex::new((None, HashMap::new())),
        }
    }

    /// Whether the certificate with `serial` was issued to `user` and is not revoked.
    /// A record that cannot be read admits nobody.
    pub fn admits(&self, user: &str, serial: &str) -> bool {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        let Ok(mut cache) = self.cache.lock() else {
            return false;
        };
        if modified.is_none() || cache.0 != modified {
            let Ok(certs) = read_issued(&self.path) else {
                return false;
            };
            *cache = (
                modified,
                certs.into_iter().map(|c| (c.serial.clone(), c)).collect(),
            );
        }
        cache
            .1
            .get(serial)
            .is_some_and(|c| c.user == user && !c.revoked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::generate_ca;

    #[test]
    fn a_user_certificate_names_its_user_and_a_host_certificate_none() {
        let new = generate_ca("test").unwrap();
        let ca = Ca::load(&new.cert_pem, &new.key_pem).unwrap();
        let cert = ca.issue_user("alice", 30).unwrap();
        let der = crate::tls::certs_from_pem(&cert.cert_pem).unwrap();
        assert_eq!(
            user_of_certificate(&der[0]),
            Some(("alice".to_string(), cert.serial.clone()))
        );
        assert_eq!(cert.serial.len(), 32);
        let (key, public) = crate::tls::generate_host_key().unwrap();
        let _ = key;
        let host = ca.issue_host("node1", &public).unwrap();
        let der = crate::tls::certs_from_pem(&host).unwrap();
        assert_eq!(user_of_certificate(&der[0]), None);
    }

    #[test]
    fn the_record_admits_issued_certificates_until_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("user-certs");
        let issued = IssuedCerts::new(path.clone());
        assert!(!issued.admits("alice", "ab"));
        let mut certs = vec![IssuedCert {
            serial: "ab".into(),
            user: "alice".into(),
            not_after: 5,
            revoked: false,
        }];
        write_issued(&path, &certs).unwrap();
        assert_eq!(read_issued(&path).unwrap(), certs);
        assert!(issued.admits("alice", "ab"));
        assert!(!issued.admits("bob", "ab"));
        certs[0].revoked = true;
        // A later modification time, whatever the file system's granularity.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_issued(&path, &certs).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(!issued.admits("alice", "ab"));
    }
}
