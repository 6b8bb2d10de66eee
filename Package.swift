// swift-tools-version: 6.2
import PackageDescription

// Swift 6 language mode (complete strict concurrency) is the package default. Warnings
// are not made errors here: that setting would travel into every package that depends
// on Hoard, so a newer compiler's new warning would break their builds. scripts/test
// builds with `-Xswiftc -warnings-as-errors` instead.
//
// Everything beyond the core is behind a package trait, off by default: an app that
// depends on the product `Hoard` alone fetches and builds swift-log and
// swift-argument-parser, never SwiftNIO, postgres-nio, swift-crypto or
// swift-service-lifecycle (SwiftPM does not even fetch a dependency that only a
// disabled trait uses). An app that wants `HoardRedis` enables the trait `Redis`:
// `.package(url: "…/Hoard", from: "…", traits: ["Redis"])`. The sources of a
// trait's modules are compiled under `#if TRAIT`, so a build of this package with
// the trait off gives empty modules, not errors. scripts/test enables every trait.
// Every code block of the README, verbatim, as an executable target of its own, so
// that building the package compiles each one. scripts/readme-examples writes the
// files in Examples/ReadmeBlocks and the list below from README.md, and checks that
// they still match it; a block depends on the modules it imports, and one that
// imports a trait's module is compiled under `#if TRAIT`.
let readmeBlockModules: [String: Target.Dependency] = [
    "Hoard": "Hoard", "HoardRedis": "HoardRedis", "HoardPostgres": "HoardPostgres",
    "HoardServiceLifecycle": "HoardServiceLifecycle", "HoardMetrics": "HoardMetrics",
    "Logging": .product(name: "Logging", package: "swift-log"),
    "ServiceLifecycle": .product(
        name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
    "HoardHummingbird": "HoardHummingbird", "HoardVapor": "HoardVapor",
    "Hummingbird": .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
    "Vapor": .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
    "HoardHTTPTypes": "HoardHTTPTypes",
    "HTTPTypes": .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["HTTPTypes"])),
]
// BEGIN README BLOCKS (written by scripts/readme-examples --write)
let readmeBlocks: [(name: String, imports: [String])] = [
    ("ReadmeBlock01", ["Foundation", "Hoard", "Logging"]),
    ("ReadmeBlock02", ["Hoard", "HoardServiceLifecycle", "Logging", "ServiceLifecycle"]),
    ("ReadmeBlock03", ["Hoard", "HoardMetrics"]),
    ("ReadmeBlock04", ["Foundation", "Hoard", "HoardHummingbird", "Hummingbird"]),
    ("ReadmeBlock05", ["Foundation", "Hoard", "HoardVapor", "Vapor"]),
    ("ReadmeBlock06", ["Foundation", "Hoard"]),
    ("ReadmeBlock07", ["HTTPTypes", "Hoard", "HoardHTTPTypes"]),
    ("ReadmeBlock08", ["Foundation", "Hoard"]),
    ("ReadmeBlock09", ["Foundation", "Hoard"]),
    ("ReadmeBlock10", ["Foundation", "Hoard"]),
    ("ReadmeBlock11", ["Hoard"]),
    ("ReadmeBlock12", ["Hoard"]),
    ("ReadmeBlock13", ["Hoard"]),
    ("ReadmeBlock14", ["Hoard"]),
    ("ReadmeBlock15", ["Foundation", "Hoard"]),
    ("ReadmeBlock16", ["Foundation", "Hoard"]),
    ("ReadmeBlock17", ["Foundation", "Hoard"]),
    ("ReadmeBlock18", ["Hoard"]),
    ("ReadmeBlock19", ["Hoard"]),
    ("ReadmeBlock20", ["Foundation", "Hoard"]),
    ("ReadmeBlock21", ["Foundation", "Hoard", "HoardRedis"]),
    ("ReadmeBlock22", ["HoardRedis"]),
    ("ReadmeBlock23", ["Foundation", "Hoard", "HoardPostgres"]),
]
// END README BLOCKS

let package = Package(
    name: "Hoard",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Hoard", targets: ["Hoard"]),
        .library(name: "HoardRedis", targets: ["HoardRedis"]),
        .library(name: "HoardPostgres", targets: ["HoardPostgres"]),
        .library(name: "HoardServiceLifecycle", targets: ["HoardServiceLifecycle"]),
        .library(name: "HoardMetrics", targets: ["HoardMetrics"]),
        .library(name: "HoardHummingbird", targets: ["HoardHummingbird"]),
        .library(name: "HoardVapor", targets: ["HoardVapor"]),
        .library(name: "HoardAsyncHTTPClient", targets: ["HoardAsyncHTTPClient"]),
        .library(name: "HoardHTTPTypes", targets: ["HoardHTTPTypes"]),
        .executable(name: "hoard", targets: ["hoard"]),
    ],
    traits: [
        .trait(name: "Redis", description: "HoardRedis: the RedisStore remote tier, on SwiftNIO."),
        .trait(name: "Postgres", description: "HoardPostgres: the PostgresStore remote tier, on postgres-nio."),
        .trait(
            name: "ServiceLifecycle",
            description: "HoardServiceLifecycle: a Cache (and the remote stores) as swift-service-lifecycle Services."),
        .trait(name: "Metrics", description: "HoardMetrics: a Cache's statistics and timings through swift-metrics."),
        .trait(name: "Hummingbird", description: "HoardHummingbird: a Hummingbird PersistDriver backed by a Hoard Cache."),
        .trait(name: "Vapor", description: "HoardVapor: a Vapor Cache (app.caches.use(.hoard(...))) backed by a Hoard Cache."),
        .trait(
            name: "AsyncHTTPClient",
            description: "HoardAsyncHTTPClient: an HTTPResponseCache transport over AsyncHTTPClient."),
        .trait(
            name: "HTTPTypes",
            description: "HoardHTTPTypes: HTTPResponseCache with swift-http-types' HTTPRequest, HTTPResponse and HTTPFields."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // Only for `swift package generate-documentation`; no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // CRC-32C with the CPU's instruction (SSE4.2, ARMv8 CRC) where it has one, chosen
        // at run time, and portable C otherwise.
        .target(name: "CHoardCRC32C"),
        // A cache-line prefetch hint, inlined into Swift callers (the memory cache's
        // frequency sketch); C because Swift has no prefetch of its own.
        .target(name: "CHoardPrefetch"),
        .target(
            name: "Hoard",
            dependencies: [
                "CHoardCRC32C",
                "CHoardPrefetch",
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows])),
                // The logging API only (no handler, no transitive dependency): the
                // one package the core depends on, so an application's own
                // Logger receives Hoard's background failures.
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A Cache's writer as a swift-service-lifecycle Service (flushes on graceful
        // shutdown); apart from the core so that the core's users never build it.
        .target(
            name: "HoardServiceLifecycle",
            dependencies: [
                "Hoard",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
            ],
        ),
        // A Cache's statistics and timings through swift-metrics; apart from the core
        // so that the core's users never build it.
        .target(
            name: "HoardMetrics",
            dependencies: [
                "Hoard",
                .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
            ]
        ),
        // A Hummingbird PersistDriver over a Hoard Cache; apart from the core so that the
        // core's users never build Hummingbird.
        .target(
            name: "HoardHummingbird",
            dependencies: [
                "Hoard",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
            ]
        ),
        // A Vapor Cache and Application.Caches.Provider over a Hoard Cache.
        .target(
            name: "HoardVapor",
            dependencies: [
                "Hoard",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        // HTTPResponseCache's transport over AsyncHTTPClient, for servers that do not use
        // URLSession.
        .target(
            name: "HoardAsyncHTTPClient",
            dependencies: [
                "Hoard",
                .product(
                    name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
            ]
        ),
        // HTTPResponseCache with swift-http-types' currency types (HTTPRequest,
        // HTTPResponse, HTTPFields); apart from the core, which needs only the toolchain.
        .target(
            name: "HoardHTTPTypes",
            dependencies: [
                "Hoard",
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["HTTPTypes"])),
            ]
        ),
        // Not a product: a Hummingbird server that serves a slow upstream value through
        // a Hoard Cache (Benchmarks/scripts/wrk-server drives it with wrk).
        .executableTarget(
            name: "HoardServer",
            dependencies: [
                "Hoard", "HoardHummingbird", "HoardRedis",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["Hummingbird"])),
            ],
            path: "Examples/HoardServer"
        ),
        // Not a product: a caching reverse proxy, HTTPResponseCache in front of one
        // origin (Examples/HTTPCacheProxy/README.md runs the HTTP caching test suite
        // against it).
        .executableTarget(
            name: "HTTPCacheProxy",
            dependencies: [
                "Hoard", "HoardAsyncHTTPClient", "HoardHTTPTypes", "HoardRedis",
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["HTTPTypes"])),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/HTTPCacheProxy",
            exclude: ["README.md"]
        ),
        // Not a product: what the Redis and PostgreSQL stores share on SwiftNIO (the
        // task executor that runs a caller on a store's event loop).
        .target(
            name: "HoardNIOSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Redis", "Postgres"])),
            ],
        ),
        .target(
            name: "HoardRedis",
            dependencies: [
                "Hoard",
                "HoardNIOSupport",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Redis"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Redis"])),
                .product(name: "Logging", package: "swift-log"),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
            ],
        ),
        .target(
            name: "HoardPostgres",
            dependencies: [
                "Hoard",
                "HoardNIOSupport",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "Logging", package: "swift-log"),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
            ],
        ),
        .executableTarget(
            name: "hoard",
            dependencies: [
                "Hoard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
        ),
        // Not a product: the README's first example, verbatim; scripts/test runs it
        // and checks what it prints.
        .executableTarget(
            name: "ReadmeFirstExample",
            dependencies: ["Hoard"],
            path: "Examples/ReadmeFirstExample"
        ),
        // Not a product: the child process the disk store's crash-safety and fault
        // tests start, kill and inspect. The test target depends on it (and on the
        // `hoard` tool, whose store commands it runs) so that both are built next to
        // the test bundle.
        .executableTarget(
            name: "HoardCrashWriter",
            dependencies: ["Hoard"],
            path: "Tests/Support/HoardCrashWriter",
        ),
        // Not a product: the child process of the two-process settings tests: several
        // write one SettingsStore namespace at once.
        .executableTarget(
            name: "HoardSettingsWriter",
            dependencies: ["Hoard"],
            path: "Tests/Support/HoardSettingsWriter"
        ),
        // Not a product: the child process that parks Swift's cooperative pool and
        // checks that a Cache's disk reads and writes complete without it.
        .executableTarget(
            name: "HoardPoolProbe",
            dependencies: ["Hoard"],
            path: "Tests/Support/HoardPoolProbe"
        ),
        // Not a product: the child process of the two-process invalidation tests, a
        // Cache on a Redis or PostgreSQL store. Separate from HoardCrashWriter so that
        // the disk store's tests do not build SwiftNIO.
        .executableTarget(
            name: "HoardRemoteWriter",
            dependencies: ["Hoard", "HoardRedis", "HoardPostgres"],
            path: "Tests/Support/HoardRemoteWriter",
        ),
        // Not a product: what the Redis and PostgreSQL tests share: driving
        // HoardRemoteWriter, silent servers, polling, recording invalidations.
        .target(
            name: "HoardRemoteTestSupport",
            dependencies: [
                "Hoard",
                "HoardServiceLifecycle",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Redis", "Postgres"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Redis", "Postgres"])),
            ],
            path: "Tests/Support/HoardRemoteTestSupport",
        ),
        // Not a product: a log handler that keeps what it is given, for the tests of
        // every module that logs.
        .target(
            name: "HoardLoggingTestSupport",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            path: "Tests/Support/HoardLoggingTestSupport"
        ),
        .testTarget(
            name: "HoardTests",
            dependencies: [
                "Hoard", "HoardCrashWriter", "HoardPoolProbe", "HoardSettingsWriter", "HoardLoggingTestSupport",
                "HoardServiceLifecycle",
                "HoardMetrics", "HoardAsyncHTTPClient", "HoardHTTPTypes", "hoard",
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["HTTPTypes"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "Logging", package: "swift-log"),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
            ]
        ),
        .testTarget(
            name: "HoardHummingbirdTests",
            dependencies: [
                "Hoard", "HoardHummingbird",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
            ]
        ),
        .testTarget(
            name: "HoardVaporTests",
            dependencies: [
                "Hoard", "HoardVapor",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "VaporTesting", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        .testTarget(
            name: "HoardRedisTests",
            dependencies: [
                "HoardRedis",
                "HoardLoggingTestSupport",
                "HoardServiceLifecycle",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                "HoardNIOSupport",
                "HoardRemoteWriter",
                "HoardRemoteTestSupport",
                "Hoard",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Redis"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Redis"])),
            ],
        ),
        .testTarget(
            name: "HoardPostgresTests",
            dependencies: [
                "HoardPostgres",
                "HoardLoggingTestSupport",
                "HoardServiceLifecycle",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "Logging", package: "swift-log"),
                "HoardRemoteWriter",
                "HoardRemoteTestSupport",
                "Hoard",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "NIOEmbedded", package: "swift-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Postgres"])),
            ],
        ),
    ],
    swiftLanguageModes: [.v6]
)
package.targets += readmeBlocks.map { block in
    .executableTarget(
        name: block.name, dependencies: block.imports.compactMap { readmeBlockModules[$0] },
        path: "Examples/ReadmeBlocks/\(block.name)")
}

