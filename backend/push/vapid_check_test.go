package push

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// verifyAuthorization checks a VAPID Authorization header as a push
// service does: the JWT's signature against the key it names, its audience
// against origin, and that it has not expired at now. It returns the
// token's claims.
func verifyAuthorization(h, origin string, now time.Time) (map[string]any, error) {
	var tok, key string
	if _, err := fmt.Sscanf(h, "vapid t=%s k=%s", &tok, &key); err != nil {
		return nil, fmt.Errorf("not a vapid header: %q", h)
	}
	tok = strings.TrimSuffix(tok, ",")
	enc := base64.RawURLEncoding
	pub, err := enc.DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("the header's key: %w", err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("the token is not a JWS of three parts")
	}
	sig, err := enc.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, errors.New("the token's signature is not 64 bytes")
	}
	pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pub)
	if err != nil {
		return nil, fmt.Errorf("the header's key is not a P-256 point: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pk, sum[:],
		new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, errors.New("the token's signature does not verify with the header's key")
	}
	var head map[string]any
	if b, err := enc.DecodeString(parts[0]); err != nil || json.Unmarshal(b, &head) != nil || head["alg"] != "ES256" {
		return nil, errors.New("the token's header is not ES256")
	}
	var claims map[string]any
	if b, err := enc.DecodeString(parts[1]); err != nil || json.Unmarshal(b, &claims) != nil {
		return nil, errors.New("the token's claims are not JSON")
	}
	if claims["aud"] != origin {
		return nil, fmt.Errorf("the token's audience is %v, not %s", claims["aud"], origin)
	}
	if exp, ok := claims["exp"].(float64); !ok || int64(exp) <= now.Unix() || int64(exp) > now.Add(24*time.Hour).Unix() {
		return nil, fmt.Errorf("the token's exp %v is not within the next 24 hours", claims["exp"])
	}
	return claims, nil
}
