package tlsconf

// Decryption of encrypted PKCS#8 private keys (RFC 5208 EncryptedPrivateKeyInfo)
// with PBES2 (RFC 8018): PBKDF2 with HMAC-SHA1/224/256/384/512 as key
// derivation, and AES-128/192/256-CBC or DES-EDE3-CBC as cipher. That is
// what `openssl pkcs8 -topk8` (v2, the default since OpenSSL 1.1) and
// Java's keytool write, and what Kafka reads with ssl.key.password. The
// PKCS#5 v1.5 and PKCS#12 PBE schemes (single DES, RC2, RC4) are refused:
// they are obsolete. Only the standard library's primitives are used.
//
//	EncryptedPrivateKeyInfo ::= SEQUENCE {
//	    encryptionAlgorithm  AlgorithmIdentifier,   -- PBES2 + PBES2-params
//	    encryptedData        OCTET STRING }
//	PBES2-params ::= SEQUENCE {
//	    keyDerivationFunc  AlgorithmIdentifier,     -- PBKDF2 + PBKDF2-params
//	    encryptionScheme   AlgorithmIdentifier }    -- cipher OID + IV
//	PBKDF2-params ::= SEQUENCE {
//	    salt            OCTET STRING,
//	    iterationCount  INTEGER,
//	    keyLength       INTEGER OPTIONAL,
//	    prf             AlgorithmIdentifier DEFAULT hmacWithSHA1 }

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}

	prfs = map[string]func() hash.Hash{
		"1.2.840.113549.2.7":  sha1.New,
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}

	ciphers = map[string]struct {
		keyLen int
		block  func(key []byte) (cipher.Block, error)
	}{
		"2.16.840.1.101.3.4.1.2":  {16, aes.NewCipher},
		"2.16.840.1.101.3.4.1.22": {24, aes.NewCipher},
		"2.16.840.1.101.3.4.1.42": {32, aes.NewCipher},
		"1.2.840.113549.3.7":      {24, des.NewTripleDESCipher},
	}
)

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a hostile key file can ask for.
const maxPBKDF2Iterations = 10_000_000

// decryptPKCS8 returns the PKCS#8 PrivateKeyInfo inside an encrypted one.
// A wrong password is reported as such (a keyPasswordError) when the
// padding or the decrypted structure gives it away.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: not an EncryptedPrivateKeyInfo: %v", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: encryption %s is not supported (only PBES2; re-encrypt with `openssl pkcs8 -topk8 -v2 aes-256-cbc`)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: key derivation %s is not supported (only PBKDF2)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: PBKDF2 parameters: %w", err)
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: PBKDF2 iteration count %d out of range", kdf.Iterations)
	}
	prf := sha1.New
	if len(kdf.PRF.Algorithm) != 0 {
		var ok bool
		if prf, ok = prfs[kdf.PRF.Algorithm.String()]; !ok {
			return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: PBKDF2 PRF %s is not supported", kdf.PRF.Algorithm)
		}
	}
	c, ok := ciphers[params.EncryptionScheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: cipher %s is not supported (AES-CBC or DES-EDE3-CBC)", params.EncryptionScheme.Algorithm)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != c.keyLen {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: PBKDF2 key length %d does not fit the cipher", kdf.KeyLength)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: cipher IV: %w", err)
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.Iterations, c.keyLen)
	if err != nil {
		return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: PBKDF2: %w", err)
	}
	block, err := c.block(key)
	if err != nil {
		return nil, err
	}
	if len(iv) != block.BlockSize() || len(info.Data) == 0 || len(info.Data)%block.BlockSize() != 0 {
		return nil, errors.New("ENCRYPTED PRIVATE KEY: IV or data length does not fit the cipher")
	}
	plain := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, info.Data)
	// PKCS#7 padding; bad padding almost always means a wrong password.
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > block.BlockSize() {
		return nil, keyPasswordErr("cannot decrypt the private key: wrong %s?", KeyKeyPassword)
	}
	for _, p := range plain[len(plain)-pad:] {
		if int(p) != pad {
			return nil, keyPasswordErr("cannot decrypt the private key: wrong %s?", KeyKeyPassword)
		}
	}
	plain = plain[:len(plain)-pad]
	var probe asn1.RawValue
	if rest, err := asn1.Unmarshal(plain, &probe); err != nil || len(rest) != 0 {
		return nil, keyPasswordErr("cannot decrypt the private key: wrong %s?", KeyKeyPassword)
	}
	return plain, nil
}
