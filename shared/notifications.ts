import nodemailer from 'nodemailer';
import type { Context } from './context.js';
import { usersRepository } from './users/users.repository.js';
import { webhooksRepository } from './webhooks/webhooks.repository.js';

/** What the owner is told (a webhook disabled after failing deliveries, …). */
export interface Notice {
  userId: string;
  kind: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
}

/**
 * Notifies an owner: a notification record the dashboard shows (`GET /api/v1/notifications`),
 * and an e-mail when SMTP_URL is configured. A failed e-mail is logged and leaves the record
 * (without `emailed_at`): the record is what must not be lost.
 */
export function createNotifier(context: Context) {
  const repository = webhooksRepository(context.db.db);
  const users = usersRepository(context.db.db);
  const smtp = context.config.smtp;
  const transport = smtp ? nodemailer.createTransport(smtp.url) : undefined;
  return {
    async notify(notice: Notice): Promise<void> {
      const row = await repository.insertNotification({ user_id: notice.userId, kind: notice.kind, title: notice.title, body: notice.body, data: notice.data });
      if (!transport || !smtp) return;
      const email = await users.emailOf(notice.userId);
      if (email === undefined) return;
      try {
        await transport.sendMail({ from: smtp.from, to: email, subject: notice.title, text: notice.body });
        await repository.markEmailed(row.id);
      } catch (error) {
        context.log.warn({ err: error, notification: row.id }, 'notification e-mail failed; the dashboard still shows it');
      }
    },
    close(): void {
      transport?.close();
    },
  };
}
