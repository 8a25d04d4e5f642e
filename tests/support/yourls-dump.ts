/**
 * YOURLS database exports for the importer's tests, as the tools YOURLS admins use write them: mysqldump
 * (its header, `/*!40101 … *\/` settings, DROP/CREATE TABLE with YOURLS's columns from
 * YOURLS/YOURLS includes/functions-install.php, LOCK TABLES, and extended INSERTs without a column
 * list, split into several statements as mysqldump does at net_buffer_length), and phpMyAdmin's SQL
 * export (INSERTs naming their columns).
 */
import type { SourceLink } from './import-fixtures.js';

/** A row of `yourls_log` (YOURLS's yourls_log_redirect writes one per click). */
export interface YourlsClick {
  click_id: number;
  click_time: string;
  shorturl: string;
  referrer: string;
  user_agent: string;
  ip_address: string;
  country_code: string;
}

/** mysql_real_escape_string's escapes, as mysqldump quotes every string (NUL and Ctrl-Z included). */
const MYSQL_ESCAPES: Record<string, string> = { '\\': '\\\\', "'": "\\'", '"': '\\"', '\n': '\\n', '\r': '\\r', '\0': '\\0', '\x1a': '\\Z' };
// eslint-disable-next-line no-control-regex -- the control characters are what mysqldump escapes
const MYSQL_SPECIAL = /[\\'"\n\r\0\x1a]/g;
const quote = (value: string | number) => (typeof value === 'number' ? String(value) : `'${value.replace(MYSQL_SPECIAL, (c) => MYSQL_ESCAPES[c]!)}'`);

const datetime = (date: Date) => date.toISOString().slice(0, 19).replace('T', ' ');

const COUNTRIES = ['DE', 'FR', 'US', 'JP', ''];
const AGENTS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15',
];

/** `count` clicks of a keyword from `firstId`, one every 13 minutes before `newest`: referrers (`direct` for none), agents, IPs and countries. */
export function yourlsClicks(keyword: string, count: number, firstId: number, newest: number): YourlsClick[] {
  return Array.from({ length: count }, (_, i) => ({
    click_id: firstId + i,
    click_time: datetime(new Date(newest - i * 13 * 60_000)),
    shorturl: keyword,
    referrer: i % 3 === 0 ? 'direct' : `https://ref${i % 2}.example/p?x='y'`,
    user_agent: AGENTS[i % AGENTS.length]!,
    ip_address: `198.51.100.${i % 250}`,
    country_code: COUNTRIES[i % COUNTRIES.length]!,
  }));
}

const urlRow = (link: SourceLink) => [link.slug, link.target, link.title, datetime(link.created), '127.0.0.1', 0];
const logRow = (click: YourlsClick) => [
  click.click_id,
  click.click_time,
  click.shorturl,
  click.referrer,
  click.user_agent,
  click.ip_address,
  click.country_code,
];

/** Extended INSERTs of `rows`, `perStatement` rows each, as mysqldump splits them. */
const inserts = (table: string, rows: (string | number)[][], perStatement: number, columns?: string[]) => {
  const out: string[] = [];
  for (let i = 0; i < rows.length; i += perStatement) {
    const values = rows
      .slice(i, i + perStatement)
      .map((row) => `(${row.map(quote).join(',')})`)
      .join(columns ? ',\n' : ',');
    out.push(`INSERT INTO \`${table}\` ${columns ? `(${columns.map((c) => `\`${c}\``).join(', ')}) ` : ''}VALUES ${columns ? '\n' : ''}${values};`);
  }
  return out.join('\n');
};

/** A mysqldump of a YOURLS database: yourls_url, yourls_log and yourls_options. */
export function yourlsMysqldump(links: SourceLink[], clicks: YourlsClick[]): string {
  return `-- MySQL dump 10.13  Distrib 8.0.35, for Linux (x86_64)
--
-- Host: localhost    Database: yourls
-- ------------------------------------------------------
-- Server version\t8.0.35

/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET NAMES utf8mb4 */;
/*!40103 SET TIME_ZONE='+00:00' */;

--
-- Table structure for table \`yourls_log\`
--

DROP TABLE IF EXISTS \`yourls_log\`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!50503 SET character_set_client = utf8mb4 */;
CREATE TABLE \`yourls_log\` (
  \`click_id\` int NOT NULL AUTO_INCREMENT,
  \`click_time\` datetime NOT NULL,
  \`shorturl\` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  \`referrer\` varchar(200) COLLATE utf8mb4_unicode_ci NOT NULL,
  \`user_agent\` varchar(255) COLLATE utf8mb4_unicode_ci NOT NULL,
  \`ip_address\` varchar(41) COLLATE utf8mb4_unicode_ci NOT NULL,
  \`country_code\` char(2) COLLATE utf8mb4_unicode_ci NOT NULL,
  PRIMARY KEY (\`click_id\`),
  KEY \`shorturl\` (\`shorturl\`)
) ENGINE=InnoDB AUTO_INCREMENT=${clicks.length + 1} DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table \`yourls_log\`
--

LOCK TABLES \`yourls_log\` WRITE;
/*!40000 ALTER TABLE \`yourls_log\` DISABLE KEYS */;
${inserts('yourls_log', clicks.map(logRow), 700)}
/*!40000 ALTER TABLE \`yourls_log\` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table \`yourls_options\`
--

DROP TABLE IF EXISTS \`yourls_options\`;
CREATE TABLE \`yourls_options\` (
  \`option_id\` bigint unsigned NOT NULL AUTO_INCREMENT,
  \`option_name\` varchar(64) COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT '',
  \`option_value\` longtext COLLATE utf8mb4_unicode_ci NOT NULL,
  PRIMARY KEY (\`option_id\`,\`option_name\`),
  KEY \`option_name\` (\`option_name\`)
) ENGINE=InnoDB AUTO_INCREMENT=8 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

LOCK TABLES \`yourls_options\` WRITE;
INSERT INTO \`yourls_options\` VALUES (1,'version','1.9.2'),(2,'db_version','506'),(3,'next_id','${links.length + 1}'),(4,'active_plugins','a:0:{}');
UNLOCK TABLES;

--
-- Table structure for table \`yourls_url\`
--

DROP TABLE IF EXISTS \`yourls_url\`;
CREATE TABLE \`yourls_url\` (
  \`keyword\` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  \`url\` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  \`title\` text COLLATE utf8mb4_unicode_ci,
  \`timestamp\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  \`ip\` varchar(41) COLLATE utf8mb4_unicode_ci NOT NULL,
  \`clicks\` int unsigned NOT NULL,
  PRIMARY KEY (\`keyword\`),
  KEY \`ip\` (\`ip\`),
  KEY \`timestamp\` (\`timestamp\`),
  KEY \`url_idx\` (\`url\`(50))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

LOCK TABLES \`yourls_url\` WRITE;
/*!40000 ALTER TABLE \`yourls_url\` DISABLE KEYS */;
${inserts('yourls_url', links.map(urlRow), 300)}
/*!40000 ALTER TABLE \`yourls_url\` ENABLE KEYS */;
UNLOCK TABLES;

-- Dump completed on 2026-11-20 10:00:00
`;
}

/** phpMyAdmin's SQL export of the same tables: INSERTs naming their columns (here in another order than the table's). */
export function yourlsPhpMyAdmin(links: SourceLink[], clicks: YourlsClick[]): string {
  const urlColumns = ['url', 'keyword', 'timestamp', 'title', 'ip', 'clicks'];
  const urlRows = links.map((link) => [link.target, link.slug, datetime(link.created), link.title, '127.0.0.1', 0]);
  return `-- phpMyAdmin SQL Dump
-- version 5.2.1
-- https://www.phpmyadmin.net/

SET SQL_MODE = "NO_AUTO_VALUE_ON_ZERO";
START TRANSACTION;
SET time_zone = "+00:00";

--
-- Dumping data for table \`yourls_url\`
--

${inserts('yourls_url', urlRows, 1000, urlColumns)}

--
-- Dumping data for table \`yourls_log\`
--

${inserts('yourls_log', clicks.map(logRow), 1000, ['click_id', 'click_time', 'shorturl', 'referrer', 'user_agent', 'ip_address', 'country_code'])}
COMMIT;
`;
}
