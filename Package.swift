// swift-tools-version: 6.2
import PackageDescription

/// Settings every Hoard target shares: Swift 6 language mode is the package default;
/// warnings fail the build of our own targets (never of dependencies).
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
]

/// With `HOARD_LOCAL_TESTS_ONLY=1` in the environment, the package leaves out the Redis
/// and PostgreSQL targets, so a build does not compile SwiftNIO and postgres-nio:
/// scripts/test sets it for its release-mode run of the local suites. The
/// dependencies stay declared, so `Package.resolved` is the same either way.
let localTestsOnly = Context.environment["HOARD_LOCAL_TESTS_ONLY"] == "1"
let serverTargets: Set<String> = [
    "HoardNIOSupport", "HoardRedis", "HoardPostgres", "HoardRemoteWriter", "HoardRemoteTestSupport",
    "HoardRedisTests", "HoardPostgresTests",
]

let package = Package(
    name: "Hoard",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Hoard", targets: ["Hoard"]),
        .library(name: "HoardRedis", targets: ["HoardRedis"]),
        .library(name: "HoardPostgres", targets: ["HoardPostgres"]),
        .executable(name: "hoard", targets: ["hoard"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // CRC-32C with the CPU's instruction (SSE4.2, ARMv8 CRC) where it has one, chosen
        // at run time, and portable C otherwise.
        .target(name: "CHoardCRC32C"),
        .target(
            name: "Hoard",
            dependencies: [
                "CHoardCRC32C",
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows])),
            ],
            swiftSettings: strict
        ),
        // Not a product: what the Redis and PostgreSQL stores share on SwiftNIO (the
        // task executor that runs a caller on a store's event loop).
        .target(
            name: "HoardNIOSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "HoardRedis",
            dependencies: [
                "Hoard",
                "HoardNIOSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "HoardPostgres",
            dependencies: [
                "Hoard",
                "HoardNIOSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "hoard",
            dependencies: [
                "Hoard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Not a product: the child process the disk store's crash-safety and fault
        // tests start, kill and inspect. The test target depends on it (and on the
        // `hoard` tool, whose store commands it runs) so that both are built next to
        // the test bundle.
        .executableTarget(
            name: "HoardCrashWriter",
            dependencies: ["Hoard"],
            path: "Tests/Support/HoardCrashWriter",
            swiftSettings: strict
        ),
        // Not a product: the child process of the two-process invalidation tests, a
        // Cache on a Redis or PostgreSQL store. Separate from HoardCrashWriter so that
        // the disk store's tests do not build SwiftNIO.
        .executableTarget(
            name: "HoardRemoteWriter",
            dependencies: ["Hoard", "HoardRedis", "HoardPostgres"],
            path: "Tests/Support/HoardRemoteWriter",
            swiftSettings: strict
        ),
        // Not a product: what the Redis and PostgreSQL tests share: driving
        // HoardRemoteWriter, silent servers, polling, recording invalidations.
        .target(
            name: "HoardRemoteTestSupport",
            dependencies: [
                "Hoard",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/Support/HoardRemoteTestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "HoardTests",
            dependencies: ["Hoard", "HoardCrashWriter", "hoard"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HoardRedisTests",
            dependencies: [
                "HoardRedis",
                "HoardNIOSupport",
                "HoardRemoteWriter",
                "HoardRemoteTestSupport",
                "Hoard",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HoardPostgresTests",
            dependencies: [
                "HoardPostgres",
                "HoardRemoteWriter",
                "HoardRemoteTestSupport",
                "Hoard",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

if localTestsOnly {
    package.targets.removeAll { serverTargets.contains($0.name) }
    package.products.removeAll { product in product.name == "HoardRedis" || product.name == "HoardPostgres" }
}
