// Command etcd is etcd's own server entry point, built from the published go.etcd.io/etcd/server/v3
// module so tests get a real etcd without downloading a release binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
