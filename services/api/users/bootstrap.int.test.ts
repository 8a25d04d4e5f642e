import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, type Config } from '#shared/config.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { verifyPassword } from '#shared/password.js';
import { testConfig } from '#tests/support/context.js';
import { createFreshDatabase, type FreshDatabase } from '#tests/support/fresh-database.js';
import { bootstrapAdmin } from './bootstrap.js';
import { usersRepository, type UsersRepository } from '#shared/users/users.repository.js';

let fresh: FreshDatabase | undefined;
afterEach(async () => {
  await fresh?.drop();
  fresh = undefined;
});

/** Only what bootstrapAdmin touches: the config and the users of an empty, migrated database. */
async function emptyPlatform(env: Record<string, string>): Promise<{ config: Config; repositories: { users: UsersRepository } }> {
  fresh = await createFreshDatabase();
  await migrateDatabase(fresh.database);
  return { config: testConfig(env), repositories: { users: usersRepository(fresh.database.db) } };
}

describe('first-run staff admin', () => {
  it('is created from ADMIN_EMAIL and ADMIN_PASSWORD when there are no users, once', async () => {
    const context = await emptyPlatform({ ADMIN_EMAIL: 'Owner@Example.com', ADMIN_PASSWORD: 'correct horse battery' });
    const result = await bootstrapAdmin(context);
    expect(result).toEqual({ created: true, email: 'Owner@Example.com', generatedPassword: undefined });
    const user = await context.repositories.users.findByEmail('owner@example.com');
    expect(user?.role).toBe('staff');
    expect(user?.password_hash).toMatch(/^scrypt\$/);
    expect(await verifyPassword('correct horse battery', user!.password_hash)).toBe(true);
    expect(await verifyPassword('wrong', user!.password_hash)).toBe(false);
    expect(await bootstrapAdmin(context)).toEqual({ created: false });
    expect(await context.repositories.users.count()).toBe(1);
  });

  // Guards issue 34: a common ADMIN_PASSWORD guarded the staff admin.
  it('refuses a common or easily guessed ADMIN_PASSWORD with a configuration error, creating nobody', async () => {
    const context = await emptyPlatform({ ADMIN_EMAIL: 'owner@example.com', ADMIN_PASSWORD: 'password1234' });
    await expect(bootstrapAdmin(context)).rejects.toThrow(/^invalid configuration: ADMIN_PASSWORD is too common/);
    await expect(bootstrapAdmin(context)).rejects.toBeInstanceOf(ConfigError);
    expect(await context.repositories.users.count()).toBe(0);
  });

  it('gets a generated password, returned once for printing, without ADMIN_PASSWORD', async () => {
    const context = await emptyPlatform({ ADMIN_EMAIL: '', ADMIN_PASSWORD: '', BASE_DOMAIN: 'links.example.org' });
    const result = await bootstrapAdmin(context);
    expect(result.created).toBe(true);
    expect(result.email).toBe('admin@links.example.org');
    expect(result.generatedPassword).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const user = await context.repositories.users.findByEmail('admin@links.example.org');
    expect(await verifyPassword(result.generatedPassword!, user!.password_hash)).toBe(true);
  });

  it('two nodes starting at once create one admin', async () => {
    const context = await emptyPlatform({ ADMIN_EMAIL: 'race@example.com', ADMIN_PASSWORD: 'another long password' });
    const results = await Promise.all([bootstrapAdmin(context), bootstrapAdmin(context)]);
    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect(await context.repositories.users.count()).toBe(1);
  });
});
