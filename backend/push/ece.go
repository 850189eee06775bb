package push

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// recordSize is the rs of every message, which is one record.
const recordSize = 4096

// headerSize is what the aes128gcm header takes of the body: salt (16),
// rs (4), idlen (1) and the sender's public key (65).
const headerSize = 16 + 4 + 1 + 65

// MaxPlaintext is the most a message can carry: push services take at
// most 4096 bytes of body (RFC 8291 §4), which hold the header, the
// plaintext, its delimiter and the AEAD tag.
const MaxPlaintext = recordSize - headerSize - 1 - 16

// ErrTooLong is returned when a plaintext does not fit one record.
var ErrTooLong = errors.New("the push message is longer than one record holds")

// Encrypt is RFC 8291's message encryption (aes128gcm, RFC 8188) of
// plaintext for a user agent whose public key is uaPublic (65 bytes,
// uncompressed P-256) and whose auth secret is auth (16 bytes), from the
// sender's single-use key as and a random salt of 16 bytes. The result is
// the whole body of the push: the header (salt, rs, the key id as's public
// key) and one record, padded with the delimiter only.
func Encrypt(plaintext, uaPublic, auth []byte, as *ecdh.PrivateKey, salt []byte) ([]byte, error) {
	if len(plaintext) > MaxPlaintext {
		return nil, fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLong, len(plaintext), MaxPlaintext)
	}
	if len(salt) != 16 || len(auth) != 16 {
		return nil, errors.New("push encryption: salt and auth secret must be 16 bytes")
	}
	ua, err := ecdh.P256().NewPublicKey(uaPublic)
	if err != nil {
		return nil, fmt.Errorf("push encryption: the subscription's key: %w", err)
	}
	shared, err := as.ECDH(ua)
	if err != nil {
		return nil, fmt.Errorf("push encryption: %w", err)
	}
	asPublic := as.PublicKey().Bytes()
	// key_info = "WebPush: info" || 0x00 || ua_public || as_public (§3.4).
	keyInfo := "WebPush: info\x00" + string(uaPublic) + string(asPublic)
	ikm, err := hkdf.Key(sha256.New, shared, auth, keyInfo, 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, headerSize+len(plaintext)+1+gcm.Overhead())
	body = append(body, salt...)
	body = binary.BigEndian.AppendUint32(body, recordSize)
	body = append(body, byte(len(asPublic)))
	body = append(body, asPublic...)
	// The last (and only) record ends with the delimiter 0x02 (RFC 8188 §2).
	record := append(append(make([]byte, 0, len(plaintext)+1), plaintext...), 0x02)
	return gcm.Seal(body, nonce, record, nil), nil
}
