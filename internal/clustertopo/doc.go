// Package clustertopo holds the tests of Strata's three-agent development
// cluster, which two files describe: docker-compose.yml (MinIO and the
// agents in containers) and scripts/local-cluster.sh (the same processes on
// one host, for machines without Docker). The package has no code of its
// own.
//
//   - TestComposeMatchesLocalCluster reads docker-compose.yml and asks the
//     script what it would run (its print-agents, print-flags and print-env
//     commands). The two must name the same agents with the same flags and
//     values, the same store bucket and prefix, the same --join topology,
//     the same credentials; only addresses differ, by the rules written in
//     localFlags. Every flag must be one `strata agent --help` lists. A
//     setting changed in one file and not the other fails it.
//   - TestLocalClusterUp runs `scripts/local-cluster.sh up` in a temporary
//     work directory on free loopback ports, checks that every agent lists
//     all three in Metadata and that a record makes the trip through the
//     store, and runs `down`; a cleanup runs `down` too, so a failure leaves
//     no process behind. Without a minio binary it is skipped, unless CI is
//     set: scripts/test.sh installs MinIO, so in CI it always runs.
package clustertopo
