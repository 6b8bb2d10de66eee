#if Redis && Postgres
// The child process of the two-process invalidation tests: another instance of a
// Cache on a remote store, in a process of its own. Not a product. It is the
// remote-store sibling of HoardCrashWriter (which stays free of SwiftNIO, since the
// disk store's tests start it), and speaks the same way: commands on stdin, one
// answer line on stdout each, written with one write(2) call.
//
//   HoardRemoteWriter URL NAME [TABLE]   URL redis://…, redis+cluster://… or postgres://…; NAME the cache's
//                                        name (its namespace); TABLE the PostgreSQL table
//
// Prints "ready" once the cache is built; then, per line of stdin:
//   set KEY VALUE    → "ok set KEY" once every tier (the remote one included) has it
//   remove KEY       → "ok remove KEY" once every tier removed it
//   quit             → exits 0
// A failure prints "error …" and exits 2.
import Foundation
import Hoard
import HoardPostgres
import HoardRedis

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    say("error \(message)")
    exit(2)
}

func makeStore(url: String, table: String?) throws -> any RemoteCacheStore {
    if url.hasPrefix("redis://") || url.hasPrefix("redis+cluster://") {
        var configuration = try RedisStore.Configuration(url: url)
        if let table { configuration.keyPrefix = table }
        return try RedisStore(configuration: configuration)
    }
    var configuration = try PostgresStore.Configuration(url: url)
    if let table { configuration.table = table }
    return try PostgresStore(configuration: configuration)
}

func main() async {
    let arguments = CommandLine.arguments
    guard arguments.count >= 3 else { fail("usage: HoardRemoteWriter URL NAME [TABLE]") }
    do {
        let store = try makeStore(url: arguments[1], table: arguments.count > 3 ? arguments[3] : nil)
        var configuration = Cache<String, String>.Configuration(name: arguments[2])
        configuration.localStores = .none
        configuration.remoteStores = [store]
        let cache = try Cache<String, String>(configuration: configuration)
        say("ready")
        while let line = readLine() {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            switch (fields.first, fields.count) {
            case ("set", 3):
                try await cache.set(fields[2], for: fields[1])
                say("ok set \(fields[1])")
            case ("remove", 2):
                try await cache.removeValue(for: fields[1])
                say("ok remove \(fields[1])")
            case ("quit", _):
                exit(0)
            default:
                fail("unknown command: \(line)")
            }
        }
    } catch {
        fail("\(error)")
    }
}

await main()
#endif
