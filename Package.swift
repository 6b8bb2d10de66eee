// swift-tools-version: 6.2
import PackageDescription

// Swift 6 language mode (complete strict concurrency) is the package default. Warnings
// are not made errors here: that setting would travel into every package that depends
// on Hoard, so a newer compiler's new warning would break their builds. scripts/test
// builds with `-Xswiftc -warnings-as-errors` instead.
let package = Package(
    name: "Hoard",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Hoard", targets: ["Hoard"]),
        .library(name: "HoardRedis", targets: ["HoardRedis"]),
        .library(name: "HoardPostgres", targets: ["HoardPostgres"]),
        .library(name: "HoardServiceLifecycle", targets: ["HoardServiceLifecycle"]),
        .library(name: "HoardMetrics", targets: ["HoardMetrics"]),
        .executable(name: "hoard", targets: ["hoard"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Only for `swift package generate-documentation`; no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .target(
            name: "Hoard",
            dependencies: [
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
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
        ),
        // A Cache's statistics and timings through swift-metrics; apart from the core
        // so that the core's users never build it.
        .target(
            name: "HoardMetrics",
            dependencies: [
                "Hoard",
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // Not a product: what the Redis and PostgreSQL stores share on SwiftNIO (the
        // task executor that runs a caller on a store's event loop).
        .target(
            name: "HoardNIOSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
            ],
        ),
        .target(
            name: "HoardRedis",
            dependencies: [
                "Hoard",
                "HoardNIOSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
        ),
        .target(
            name: "HoardPostgres",
            dependencies: [
                "Hoard",
                "HoardNIOSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
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
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
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
                "Hoard", "HoardCrashWriter", "HoardPoolProbe", "HoardLoggingTestSupport", "HoardServiceLifecycle",
                "HoardMetrics", "hoard",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HoardRedisTests",
            dependencies: [
                "HoardRedis",
                "HoardLoggingTestSupport",
                "HoardServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "HoardNIOSupport",
                "HoardRemoteWriter",
                "HoardRemoteTestSupport",
                "Hoard",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
        ),
        .testTarget(
            name: "HoardPostgresTests",
            dependencies: [
                "HoardPostgres",
                "HoardLoggingTestSupport",
                "HoardServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                "HoardRemoteWriter",
                "HoardRemoteTestSupport",
                "Hoard",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
        ),
    ],
    swiftLanguageModes: [.v6]
)
