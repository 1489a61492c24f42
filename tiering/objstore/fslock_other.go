//go:build !unix

package objstore

import "errors"

// flockFile is unavailable: conditional writes on the fs backend rely on
// flock, so this build refuses mutations rather than risk lost updates.
func flockFile(string) (func(), error) {
	return nil, errors.New("fs: file locking needs a unix system")
}
