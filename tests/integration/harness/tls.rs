//! Test certificates made with the `openssl` CLI.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use tempfile::TempDir;

/// Test certificates made with the `openssl` CLI: a CA, a server certificate for
/// 127.0.0.1/localhost and a client certificate signed by it, and a second CA that
/// signed nothing we use (an untrusted root).
pub struct Certs {
    pub dir: TempDir,
}

impl Certs {
    pub fn make() -> Certs {
        let dir = tempfile::tempdir().expect("temp dir");
        let certs = Certs { dir };
        let ssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(certs.dir.path())
                .stdin(Stdio::null())
                .output()
                .expect("openssl must be installed");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        for ca in ["ca", "rogue-ca"] {
            let (key, crt, subj) = (
                format!("{ca}.key"),
                format!("{ca}.crt"),
                format!("/CN={ca}"),
            );
            let mut args = vec!["req", "-x509", "-nodes", "-days", "2"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &crt, "-subj", &subj]);
            ssl(&args);
        }
        std::fs::write(
            certs.path("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .unwrap();
        std::fs::write(certs.path("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        std::fs::write(
            certs.path("wrong-name.ext"),
            "subjectAltName=DNS:elsewhere.invalid\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        for who in ["server", "client", "wrong-name"] {
            let key = format!("{who}.key");
            let csr = format!("{who}.csr");
            let crt = format!("{who}.crt");
            let ext = format!("{who}.ext");
            let subj = format!("/CN={who}");
            let mut args = vec!["req", "-nodes"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
            ssl(&args);
            ssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                &crt,
                "-extfile",
                &ext,
            ]);
        }
        certs
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The path as a string, for arguments.
    pub fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}
