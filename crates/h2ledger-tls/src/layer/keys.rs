//! Keys: looking a connection's client random up in the key log, deriving the traffic keys
//! its version needs (TLS 1.3 handshake and application secrets, RFC 8446 §7.3; TLS 1.2's
//! master secret, RFC 5246 §6.3), the application key at a side's Finished, KeyUpdate
//! (RFC 8446 §4.6.3). Each outcome goes to the connection's [`Keys`](super::state::Keys)
//! state.

use h2ledger_tcp::{Dir, Write};

use super::conn::{label, Conn, Mode, TlsConn};
use super::state::{Event, KeyEvent, State};
use super::tls::Tls;
use crate::crypto::{self, Decryptor};
use crate::keylog::{KeyLog, Secrets};

impl TlsConn {
    /// Looks the client random up and builds the decryptors the version needs. `None` when
    /// the hellos lack what a lookup needs; else whether every direction has a key (or is
    /// given up).
    fn lookup_keys(&mut self, keylog: &KeyLog) -> Option<bool> {
        let (Some(random), Some(sh), Some(suite), Some(client)) = (
            self.client_random,
            self.sh.as_ref(),
            self.suite,
            self.client,
        ) else {
            return None;
        };
        let none = Secrets::default();
        let secrets = keylog.get(&random).unwrap_or(&none);
        let (cd, sd) = (client, client.other());
        if suite.tls13 {
            // Both directions need a key (or are given up).
            let mut ok = true;
            for (dir, hs, app) in [
                (cd, &secrets.client_handshake, &secrets.client_traffic_0),
                (sd, &secrets.server_handshake, &secrets.server_traffic_0),
            ] {
                let d = self.dirs.get_mut(dir);
                if d.dec.is_some() || d.state.stopped() {
                    continue;
                }
                if matches!(d.state, State::App | State::Trial) {
                    // Past its Finished, waiting for the application secret.
                    if let Some(s) = app {
                        d.dec = Decryptor::tls13(suite, s);
                        d.secret = Some(s.clone());
                    }
                } else if let Some(s) = hs {
                    d.dec = Decryptor::tls13(suite, s);
                } else if let Some(s) = app {
                    d.dec = Decryptor::tls13(suite, s);
                    d.secret = Some(s.clone());
                    d.state.on(Event::TrialKey);
                }
                ok &= d.dec.is_some();
            }
            Some(ok)
        } else if let Some(m) = secrets.master.as_deref().or_else(|| {
            (!sh.session_id.is_empty())
                .then(|| keylog.master_by_session(&sh.session_id))
                .flatten()
        }) {
            Some(match Decryptor::tls12(suite, m, &random, &sh.random) {
                Some((c12, s12)) => {
                    self.dirs.get_mut(cd).dec = Some(c12);
                    self.dirs.get_mut(sd).dec = Some(s12);
                    true
                }
                None => false,
            })
        } else {
            Some(false)
        }
    }

    /// The application traffic key of `dir`, from the key log as it is now (live, it may
    /// have grown since the handshake keys were found); its secret is kept for KeyUpdate.
    pub(crate) fn app_decryptor(&mut self, keylog: &KeyLog, dir: Dir) -> Option<Decryptor> {
        let suite = self.suite?;
        let s = keylog.get(&self.client_random?)?;
        let secret = if self.client == Some(dir) {
            s.client_traffic_0.as_ref()?
        } else {
            s.server_traffic_0.as_ref()?
        };
        let dec = Decryptor::tls13(suite, secret)?;
        self.dirs.get_mut(dir).secret = Some(secret.clone());
        Some(dec)
    }

    /// A KeyUpdate from `dir`: its next application secret and key. Whether there was a
    /// secret to update.
    pub(crate) fn key_update(&mut self, dir: Dir) -> bool {
        let Some(suite) = self.suite else {
            return false;
        };
        let d = self.dirs.get_mut(dir);
        let Some(next) = d
            .secret
            .as_ref()
            .and_then(|s| crypto::next_traffic_secret(suite.hash, s))
        else {
            return false;
        };
        d.dec = Decryptor::tls13(suite, &next);
        d.secret = Some(next);
        self.key_updates += 1;
        true
    }
}

impl Tls {
    /// Looks connection `id`'s keys up (at its ServerHello, or again when the key log grew)
    /// and tells its key state what was found.
    pub(crate) fn setup_keys(&mut self, id: u32) {
        let Some(c) = self.conns.get_mut(id) else {
            return;
        };
        let start = c.meta.start;
        let Some(t) = c.tls_mut() else { return };
        let ev = match t.lookup_keys(&self.keylog) {
            None => KeyEvent::NoLookup,
            Some(true) => KeyEvent::Found,
            Some(false) => KeyEvent::NotFound {
                wait: self.cfg.wait_for_keys,
                at: start,
            },
        };
        t.key_event(ev, &mut self.waiting);
    }

    /// TLS 1.3: `dir`'s Finished, carried by write `w`. The records after it use its
    /// application key; without one, the side is given up, or (live) its records wait for
    /// the key log.
    pub(crate) fn finished(&mut self, id: u32, dir: Dir, w: &Write) {
        let wait = self.cfg.wait_for_keys;
        let Some(Conn {
            meta,
            mode: Mode::Tls(t),
        }) = self.conns.get_mut(id)
        else {
            return;
        };
        if t.tls13() != Some(true) || t.dirs.get(dir).state != State::Hello {
            return;
        }
        let dec = t.app_decryptor(&self.keylog, dir);
        let d = t.dirs.get_mut(dir);
        d.state.on(Event::AppKey);
        d.dec = dec;
        if d.dec.is_some() {
            return;
        }
        if wait {
            // Live: the key log may not have this line yet; hold until it does.
            t.key_event(KeyEvent::NoAppKey { wait, at: w.ts }, &mut self.waiting);
            return;
        }
        d.state.on(Event::Stop);
        t.key_event(KeyEvent::NoAppKey { wait, at: w.ts }, &mut self.waiting);
        let who = if t.client == Some(dir) {
            "CLIENT_TRAFFIC_SECRET_0"
        } else {
            "SERVER_TRAFFIC_SECRET_0"
        };
        let msg = format!(
            "{}: the key log has no {who}; application data of that side is not decrypted",
            label(meta, t.client)
        );
        self.warnings.push("tls-no-key", msg);
    }
}
