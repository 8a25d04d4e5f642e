import { describe, expect, it } from 'vitest';
import { classifyAttack } from './attack.js';

describe('classifyAttack', () => {
  it.each([
    ['/wp-login.php', 'scanner'],
    ['/wp-admin/setup-config.php', 'scanner'],
    ['/.env', 'scanner'],
    ['/.git/config', 'scanner'],
    ['/phpmyadmin/', 'scanner'],
    ['/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php', 'scanner'],
    ['/index.php', 'scanner'],
    ['/cgi-bin/luci', 'scanner'],
    ['/backup/db', 'scanner'],
    ['/actuator/health', 'scanner'],
    ['/information_schema', 'sqli'],
    ['/etc/passwd', 'traversal'],
    ['/etc/shadow', 'traversal'],
    ['/promo/etc/passwd', 'traversal'],
    ['/promo/information_schema?x=1', 'sqli'],
    ['/../../etc/passwd', 'traversal'],
    ['/%2e%2e/%2e%2e/etc/passwd', 'traversal'],
    ['/%252e%252e/secret', 'traversal'],
    ['/promo/..%2f..%2fetc', 'traversal'],
    ["/promo?id=1' OR '1'='1", 'sqli'],
    ['/promo?id=1%20UNION%20SELECT%20password%20FROM%20users', 'sqli'],
    ['/promo?id=1;DROP TABLE users', 'sqli'],
    ["/promo?q=x' --", 'sqli'],
    ['/promo?id=sleep(5)', 'sqli'],
    ['/promo?q=<script>alert(1)</script>', 'xss'],
    ['/promo?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E', 'xss'],
    ['/promo?next=javascript:alert(document.cookie)', 'xss'],
    ['/promo?x=<img src=x onerror=alert(1)>', 'xss'],
    ['/promo?x=%253Csvg%252Fonload%253Dalert(1)%253E', 'xss'],
  ])('%s is %s', (path, type) => {
    expect(classifyAttack(path)).toBe(type);
  });

  it.each([
    '/promo',
    '/spring-sale_2026',
    '/promo?utm_source=newsletter&utm_medium=email&utm_campaign=spring',
    '/promo?utm_content=select-from-menu',
    '/promo?q=rock%20%26%20roll',
    "/promo?name=O'Brien",
    '/promo?ref=or-1',
    '/a1b2c3d',
    '/promo?redirect=https%3A%2F%2Fexample.com%2Fa%2Fb',
    '/promo?malformed=%E0%A4%A',
    '/promo?q=100%',
  ])('%s is an ordinary request', (path) => {
    expect(classifyAttack(path)).toBeUndefined();
  });
});
