//! One complete record of a TLS direction: counted, then read in the clear (handshake,
//! ChangeCipherSpec), held until its keys are known, or decrypted (RFC 8446 §5.2, RFC 5246
//! §6.2.3.3) into the plaintext of the write that completed it; the handshake messages it
//! carries, and the held records a ServerHello releases. These call each other (a
//! ServerHello releases records, a released record may carry a handshake), so they are one
//! module.

use h2ledger_tcp::{ConnId, Dir, Sink, Write};

use super::state::{Event, State};
use super::tls::Layer;
use crate::crypto;
use crate::wire::{self, RecordHeader, RECORD_HEADER_LEN};

/// Capacity of the pending-plaintext buffer kept between calls; a larger one (a big
/// segment's records) is freed after use.
const OUT_KEEP: usize = 1 << 17;

impl<S: Sink> Layer<'_, S> {
    /// One complete record (header + payload) of a TLS direction, completed by write `w`.
    pub(crate) fn record(&mut self, id: u32, dir: Dir, w: &Write, rec: &[u8]) {
        let Some(t) = self.tls.conns.tls_mut(id) else {
            return;
        };
        t.dirs.get_mut(dir).records += 1;
        self.tls.report.records += 1;
        self.inner.tls_record(ConnId(id), dir, w);
        self.process(id, dir, w, rec, false);
    }

    /// Reads or decrypts a record; `replay`: a held record released.
    fn process(&mut self, id: u32, dir: Dir, w: &Write, rec: &[u8], replay: bool) {
        let Some(t) = self.tls.conns.tls_mut(id) else {
            return;
        };
        let h = RecordHeader::parse(rec).expect("a whole record");
        let d = t.dirs.get(dir);
        let payload_len = rec.len() - RECORD_HEADER_LEN;
        if d.state.stopped() {
            t.dirs.get_mut(dir).encrypted += payload_len as u64;
            return;
        }
        let tls13 = t.tls13();
        let protected = match tls13 {
            Some(true) => h.content_type == wire::APPLICATION_DATA,
            Some(false) => d.state == State::Cipher && h.content_type != wire::CHANGE_CIPHER_SPEC,
            // Before the ServerHello: the ClientHello and what may precede the version's
            // choice is plaintext; a protected record of the client waits for the hello.
            None => h.content_type == wire::APPLICATION_DATA,
        };
        if !protected {
            if tls13.is_none() && t.client == Some(dir) && h.content_type != wire::HANDSHAKE {
                self.tls.hold(id, dir, w, rec, replay);
                return;
            }
            match h.content_type {
                wire::HANDSHAKE => self.handshake(id, dir, w, &rec[RECORD_HEADER_LEN..]),
                wire::CHANGE_CIPHER_SPEC if tls13 == Some(false) => {
                    t.dirs.get_mut(dir).state.on(Event::ChangeCipherSpec);
                }
                _ => {}
            }
            return;
        }
        if t.mid_stream || t.unsupported {
            t.dirs.get_mut(dir).encrypted += payload_len as u64;
            return;
        }
        if t.dirs.get(dir).dec.is_none() {
            // Keys may still come: the ServerHello (client side, reordered capture) or a key
            // log that catches up (live).
            if t.sh.is_none() || t.keys.waiting_since().is_some() {
                self.tls.hold(id, dir, w, rec, replay);
            } else {
                t.dirs.get_mut(dir).encrypted += payload_len as u64;
            }
            return;
        }
        let header: [u8; 5] = rec[..5].try_into().expect("5 bytes");
        let payload = &rec[RECORD_HEADER_LEN..];
        let trial = t.dirs.get(dir).state == State::Trial;
        match self.decrypt(id, dir, w, &header, payload) {
            Ok(len) => {
                let t = self.tls.conns.tls_mut(id).expect("exists");
                t.dirs.get_mut(dir).state.on(Event::Authenticated);
                self.plaintext(id, dir, w, h.content_type, len);
                return;
            }
            Err(_) if trial => {
                let t = self.tls.conns.tls_mut(id).expect("exists");
                t.dirs.get_mut(dir).encrypted += payload_len as u64;
                return;
            }
            Err(_) => {}
        }
        let t = self.tls.conns.tls_mut(id).expect("exists");
        if tls13 == Some(true) && t.dirs.get(dir).state == State::Hello {
            // A handshake message this layer did not see end (or no Finished was recognised):
            // the application key may already be in use.
            if let Some(dec) = t.app_decryptor(&self.tls.keylog, dir) {
                let d = t.dirs.get_mut(dir);
                d.dec = Some(dec);
                d.state.on(Event::AppKey);
                if let Ok(len) = self.decrypt(id, dir, w, &header, payload) {
                    self.plaintext(id, dir, w, h.content_type, len);
                    return;
                }
            }
        }
        let t = self.tls.conns.tls_mut(id).expect("exists");
        let d = t.dirs.get_mut(dir);
        d.state.on(Event::Stop);
        d.encrypted += payload_len as u64;
        t.auth_failures += 1;
        self.tls.report.auth_failures += 1;
        let seq = d.dec.as_ref().map_or(0, |d| d.seq);
        let who = t.who(dir);
        let msg = format!(
            "{}: a {who} TLS record (#{seq} under its key, {payload_len} bytes) failed \
             authentication: wrong key in the key log, or damaged bytes; the {who}'s later \
             records are not decrypted",
            self.tls.conns.label(id),
        );
        self.tls.warnings.push("tls-auth-failure", msg);
    }

    /// Decrypts `payload` (a record of `dir` under its current key) at the end of the pending
    /// plaintext of this write (`out`); returns the plaintext's length there. On failure `out`
    /// is as before.
    fn decrypt(
        &mut self,
        id: u32,
        dir: Dir,
        w: &Write,
        header: &[u8; 5],
        payload: &[u8],
    ) -> Result<usize, crypto::AuthError> {
        if self
            .tls
            .out_to
            .is_some_and(|(i, d, o)| (i, d, o.index) != (id, dir, w.index))
        {
            self.flush();
        }
        let Some(dec) = self
            .tls
            .conns
            .tls_mut(id)
            .and_then(|t| t.dirs.get_mut(dir).dec.as_mut())
        else {
            return Err(crypto::AuthError);
        };
        let out = &mut self.tls.out;
        let start = out.len();
        out.extend_from_slice(payload);
        match dec.open(header, &mut out[start..]) {
            Ok(len) => {
                out.truncate(start + len);
                Ok(len)
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// Hands the pending plaintext (one write's records) to the inner sink.
    pub(crate) fn flush(&mut self) {
        if let Some((id, dir, w)) = self.tls.out_to.take() {
            if !self.tls.out.is_empty() {
                self.inner.data(ConnId(id), dir, &w, &self.tls.out);
            }
        }
        self.tls.out.clear();
        if self.tls.out.capacity() > OUT_KEEP {
            self.tls.out = Vec::new();
        }
    }

    /// A decrypted record: the last `len` bytes of `out` are its plaintext. Application data
    /// stays there for the inner sink (see [`Layer::flush`]); anything else is taken out.
    fn plaintext(&mut self, id: u32, dir: Dir, w: &Write, outer_type: u8, len: usize) {
        let start = self.tls.out.len() - len;
        let Some(t) = self.tls.conns.tls_mut(id) else {
            self.tls.out.truncate(start);
            return;
        };
        let pt = &self.tls.out[start..];
        let (kind, end) = if t.tls13() == Some(true) {
            // TLSInnerPlaintext: content, the real type, zero padding (RFC 8446 §5.2).
            let Some(end) = pt.iter().rposition(|&b| b != 0) else {
                self.tls.out.truncate(start);
                return;
            };
            (pt[end], end)
        } else {
            (outer_type, len)
        };
        t.decrypted_any = true;
        match kind {
            wire::APPLICATION_DATA => {
                t.dirs.get_mut(dir).plaintext += end as u64;
                if t.forward() && end > 0 {
                    self.tls.out.truncate(start + end);
                    self.tls.out_to = Some((id, dir, *w));
                } else {
                    self.tls.out.truncate(start);
                }
            }
            wire::HANDSHAKE => {
                let pt = self.tls.out[start..start + end].to_vec();
                self.tls.out.truncate(start);
                self.handshake(id, dir, w, &pt);
            }
            _ => self.tls.out.truncate(start),
        }
    }

    /// Handshake bytes of a direction (plaintext or decrypted), split into messages.
    fn handshake(&mut self, id: u32, dir: Dir, w: &Write, bytes: &[u8]) {
        let Some(t) = self.tls.conns.tls_mut(id) else {
            return;
        };
        let mut msgs: Vec<(u8, Vec<u8>)> = Vec::new();
        t.dirs
            .get_mut(dir)
            .hs
            .feed(bytes, |m| msgs.push((m.kind, m.body.to_vec())));
        for (kind, body) in msgs {
            self.message(id, dir, w, kind, &body);
        }
    }

    /// One handshake message of `dir`.
    fn message(&mut self, id: u32, dir: Dir, w: &Write, kind: u8, body: &[u8]) {
        let Some(t) = self.tls.conns.tls_mut(id) else {
            return;
        };
        match kind {
            wire::CLIENT_HELLO => t.client_hello(dir, body),
            wire::SERVER_HELLO => {
                if let Some(ok) = t.server_hello(dir, body) {
                    if ok {
                        self.tls.setup_keys(id);
                    }
                    self.release(id, dir.other());
                }
            }
            wire::ENCRYPTED_EXTENSIONS => t.encrypted_extensions(dir, body),
            wire::FINISHED => self.tls.finished(id, dir, w),
            wire::KEY_UPDATE => {
                let updated = t.key_update(dir);
                self.tls.report.key_updates += u64::from(updated);
            }
            _ => {}
        }
    }

    /// Processes a direction's held records again (keys or the ServerHello arrived).
    pub(crate) fn release(&mut self, id: u32, dir: Dir) {
        for (w, rec) in self.tls.take_held(id, dir) {
            self.process(id, dir, &w, &rec, true);
        }
    }
}
