import { afterEach, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { verifyPassword } from '#shared/password.js';
import { testConfig } from '#tests/support/context.js';
import { createFreshDatabase, type FreshDatabase } from '#tests/support/fresh-database.js';
import { bootstrapAdmin } from './bootstrap.js';
import { usersRepository } from '#shared/users/users.repository.js';

let fresh: FreshDatabase | undefined;
afterEach(async () => {
  await fresh?.drop();
  fresh = undefined;
});

/** A context with only what bootstrapAdmin touches: an empty, migrated database and the config. */
async function emptyPlatform(env: Record<string, string>): Promise<Context> {
  fresh = await createFreshDatabase();
  await migrateDatabase(fresh.database);
  return { config: testConfig(env), db: fresh.database } as Context;
}

describe('first-run staff admin', () => {
  it('is created from ADMIN_EMAIL and ADMIN_PASSWORD when there are no users, once', async () => {
    const context = await emptyPlatform({ ADMIN_EMAIL: 'Owner@Example.com', ADMIN_PASSWORD: 'correct horse battery' });
    const result = await bootstrapAdmin(context);
    expect(result).toEqual({ created: true, email: 'Owner@Example.com', generatedPassword: undefined });
    const user = await usersRepository(context.db.db).findByEmail('owner@example.com');
    expect(user?.role).toBe('staff');
    expect(user?.password_hash).toMatch(/^scrypt\$/);
    expect(await verifyPassword('correct horse battery', user!.password_hash)).toBe(true);
    expect(await verifyPassword('wrong', user!.password_hash)).toBe(false);
    expect(await bootstrapAdmin(context)).toEqual({ created: false });
    expect(await usersRepository(context.db.db).count()).toBe(1);
  });

  it('gets a generated password, returned once for printing, without ADMIN_PASSWORD', async () => {
    const context = await emptyPlatform({ ADMIN_EMAIL: '', ADMIN_PASSWORD: '', BASE_DOMAIN: 'links.example.org' });
    const result = await bootstrapAdmin(context);
    expect(result.created).toBe(true);
    expect(result.email).toBe('admin@links.example.org');
    expect(result.generatedPassword).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const user = await usersRepository(context.db.db).findByEmail('admin@links.example.org');
    expect(await verifyPassword(result.generatedPassword!, user!.password_hash)).toBe(true);
  });

  it('two nodes starting at once create one admin', async () => {
    const context = await emptyPlatform({ ADMIN_EMAIL: 'race@example.com', ADMIN_PASSWORD: 'another long password' });
    const results = await Promise.all([bootstrapAdmin(context), bootstrapAdmin(context)]);
    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect(await usersRepository(context.db.db).count()).toBe(1);
  });
});
