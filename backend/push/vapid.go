package push

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// KeyFile is the VAPID key's file name inside the home folder.
const KeyFile = "push-vapid-key.pem"

// Keys is the application server's VAPID key pair (RFC 8292, P-256), made
// once and kept in the home: a browser's subscription is bound to its
// public key, so a new key would orphan every subscription.
type Keys struct {
	private *ecdsa.PrivateKey
	public  []byte // uncompressed point, as applicationServerKey takes it
}

// LoadKeys reads the VAPID key from home, making it (0600) at first use.
// Two processes making it at once agree: the one that loses the race reads
// the winner's.
func LoadKeys(home string) (*Keys, error) {
	path := filepath.Join(home, KeyFile)
	for range 3 {
		b, err := os.ReadFile(path)
		if err == nil {
			if err := os.Chmod(path, 0o600); err != nil {
				return nil, fmt.Errorf("protect the push key: %w", err)
			}
			return parseKey(b)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read the push key: %w", err)
		}
		if err := makeKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, errors.New("the push key could not be made")
}

func makeKey(path string) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("make the push key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return fmt.Errorf("make the push key: %w", err)
	}
	// Written whole under a temporary name, then linked into place: a
	// reader never sees half a key, and a key already there is kept.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".push-key-*")
	if err != nil {
		return fmt.Errorf("write the push key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write the push key: %w", err)
	}
	if err := pem.Encode(tmp, &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return fmt.Errorf("write the push key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write the push key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the push key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("write the push key: %w", err)
	}
	return nil
}

func parseKey(b []byte) (*Keys, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, errors.New("the push key file holds no EC private key; remove it to make a new one (browsers then subscribe again)")
	}
	k, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil || k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("the push key is not a P-256 key; remove it to make a new one: %v", err)
	}
	return newKeys(k)
}

func newKeys(k *ecdsa.PrivateKey) (*Keys, error) {
	pub, err := k.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("the push key: %w", err)
	}
	return &Keys{private: k, public: pub.Bytes()}, nil
}

// Public is the public key in URL-safe base64 without padding: the
// applicationServerKey a page subscribes with, and the k of the header.
func (k *Keys) Public() string { return base64.RawURLEncoding.EncodeToString(k.public) }

// Authorization is the VAPID Authorization header for a push to endpoint
// (RFC 8292 §3): a JWT signed with ES256 for the endpoint's origin, valid
// until exp, naming subject (a mailto: or https: contact), and the key.
func (k *Keys) Authorization(endpoint, subject string, exp time.Time) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("push endpoint %q: not a URL with a host", endpoint)
	}
	header, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": "ES256"})
	claims, err := json.Marshal(struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}{u.Scheme + "://" + u.Host, exp.Unix(), subject})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, k.private, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign the push token: %w", err)
	}
	// JWS's ES256 signature is R and S as 32 bytes each (RFC 7518 §3.4).
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return "vapid t=" + input + "." + enc.EncodeToString(sig) + ", k=" + k.Public(), nil
}
